# Adds lock entries for platform-specific optional dependencies the package mirror does not carry,
# so `npm ci` accepts the lock; npm skips them on other platforms by os/cpu/libc.
import json, re, sys
p = sys.argv[1]
j = json.load(open(p))
pk = j['packages']
def platform(name):
    n = name.split('/')[-1]
    os_ = next((o for o in ['android','darwin','freebsd','linux','win32','wasm32'] if f'-{o}-' in n or n.endswith(f'-{o}')), None)
    cpu = next((c for c in ['arm64','x64','arm','ia32','wasm32'] if f'-{c}' in n), None)
    libc = 'musl' if 'musl' in n else ('glibc' if '-gnu' in n and os_ == 'linux' else None)
    return os_, cpu, libc
added = []
for key, meta in list(pk.items()):
    for dep, ver in (meta.get('optionalDependencies') or {}).items():
        loc = f'node_modules/{dep}'
        if loc in pk: continue
        os_, cpu, libc = platform(dep)
        entry = {'version': ver, 'optional': True}
        if meta.get('dev'): entry['dev'] = True
        if os_ == 'wasm32': entry['cpu'] = ['wasm32']
        else:
            if cpu: entry['cpu'] = [cpu]
            if os_: entry['os'] = [os_]
            if libc: entry['libc'] = [libc]
        pk[loc] = entry; added.append(dep)
j['packages'] = {k: pk[k] for k in sorted(pk, key=lambda k: (k != '', k))}
open(p, 'w').write(json.dumps(j, indent=2) + '\n')
print('added', len(added), added)
