/**
 * The screen's vocabulary: command families, system locations, and the markers words carry
 * for values not known statically.
 */

/** Unknown text that may be empty at run time: an unset variable, kept as `MAYBE_EMPTY name MAYBE_EMPTY`. */
export const MAYBE_EMPTY = "\u0000";
export const MAYBE_EMPTY_VAR = /\u0000([^\u0000]*)\u0000/g;
/** Unknown text that is never empty (`$(…)`, `$PWD`, `${x:?}`). */
export const UNKNOWN = "\u0001";
/** Brace expansion, loop lists and word products stop here: enough to see `/{bin,etc}`, bounded for `{1..99999}`. */
export const MAX_FIELDS = 64;
/** `sh -c` strings and shells fed from pipes are parsed again, this many levels deep. */
export const MAX_DEPTH = 4;

export const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "rbash", "yash", "posh"]);
export const SCRIPT_INTERPRETERS = /^(?:python[\d.]*|pypy[\d.]*|perl[\d.]*|ruby[\d.]*|node|nodejs|php[\d.]*|lua[\d.]*|deno|bun|Rscript|tclsh|osascript)$/;
/** Commands that write what they fetch to a file (`-o`), tracked for a later run of that file. */
export const DOWNLOADERS = new Set(["curl", "wget", "fetch", "aria2c", "http", "https", "xh", "lwp-request", "GET"]);
/** Commands whose output comes from the network: downloaders and raw socket clients. */
export const NETWORK_SOURCES = new Set([...DOWNLOADERS, "nc", "ncat", "netcat", "socat", "telnet"]);
/** Commands that turn encoded text back into a script (`echo … | base64 -d | sh`). */
export const DECODERS = new Set(["base64", "base32", "basenc", "xxd", "uudecode", "gunzip", "zcat", "rev", "openssl"]);
export const POWER = new Set(["shutdown", "reboot", "halt", "poweroff"]);
export const SYSTEMCTL_POWER = new Set(["poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep", "suspend-then-hibernate", "rescue", "emergency", "soft-reboot"]);
export const FORMATTERS = /^(?:mkfs(?:\..+)?|mke2fs|mkswap|mkdosfs|mkntfs|wipefs|blkdiscard)$/;
/** Partition table editors; only their listing forms are allowed. */
export const PARTITIONERS = new Set(["fdisk", "sfdisk", "gdisk", "sgdisk", "cfdisk", "cgdisk", "parted"]);
export const ROOT_DIRS = new Set(["bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "opt", "proc", "root", "run", "sbin", "srv", "sys", "usr", "var", "snap", "Users", "System", "Library", "Applications", "private"]);
export const BLOCK_DEVICE = /^\/dev\/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|dm-\d|md\d|mapper\/|loop\d|nbd\d|sr\d|zram\d|root$|mem$|kmem$|port$|disk\/)/;
/** System locations a command has no business writing (device files are judged separately). */
export const SYSTEM_WRITE = /^\/(?:etc|boot|bin|sbin|lib|lib32|lib64|libx32|sys|usr(?!\/(?:local|src)(?:\/|$)))(?:\/|$)|^\/proc\/(?:sys(?:rq-trigger)?(?:\/|$))|^\/var\/spool\/cron(?:\/|$)/;
/** System trees where deleting or re-owning anything at any depth breaks the machine. */
export const SYSTEM_TREE = /^\/(?:etc|boot|bin|sbin|lib|lib32|lib64|libx32|sys|proc|usr(?!\/(?:local|src)(?:\/|$)))(?:\/|$)/;
/** Words whose presence makes an unparseable line worth refusing rather than passing. */
export const DANGEROUS_TOKEN =
  /(?:^|[^\w.-])(?:rm|mkfs(?:\.\w+)?|mke2fs|wipefs|dd|shutdown|reboot|halt|poweroff|init|telinit|systemctl|kill|pkill|killall5?|chmod|chown|chgrp|crontab|curl|wget|eval|busybox|xargs|find)(?![\w.-])|:\s*\(\s*\)|\/dev\/|\/etc\//;
/** Paths a shell reads its program from when it is its stdin. */
export const STDIN_PATHS = /^(?:-|\/dev\/stdin|\/dev\/fd\/0|\/proc\/(?:self|thread-self|\d+)\/fd\/0)$/;
/** bash's network pseudo-files. */
export const NET_DEVICE = /^\/dev\/(?:tcp|udp)\//;
