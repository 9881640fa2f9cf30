#!/usr/bin/env python3
"""Splits a `perf script` dump of `connstorm load --tls` (recorded with --call-graph dwarf) into
the TLS client's CPU categories: the crypto floor's primitives (X25519, the ECDSA verify), the
rest of rustls/aws-lc (hashing and HKDF, AEAD, allocation and copies, randomness, other),
the kernel, connstorm's own code and libc, and the in-process crypto floor's own thread.
Usage: perf script -i perf.data > s.txt && scripts/perf-split-tls.py s.txt
(docs/performance/2026-12-07-tls-client-cpu.md)."""
import re,collections,sys
s=open(sys.argv[1]).read().split('\n\n')
tot=0; cat=collections.Counter(); sub=collections.Counter()
for blk in s:
    lines=[l for l in blk.split('\n') if l.strip()]
    if len(lines)<2: continue
    fr=[l.strip() for l in lines[1:]]
    tot+=1
    j=' | '.join(fr)
    leaf=fr[0]
    if 'floor::measure' in j or 'floor::' in j and 'measure' in j: c='floor thread'
    elif 'kernel' in leaf or 'vmlinux' in leaf: c='kernel'
    elif 'x25519' in j or 'curve25519' in j: c='crypto: x25519'
    elif 'verify_signature' in j or 'ECDSA_verify' in j or 'verify_tls13_signature' in j: c='crypto: ecdsa verify'
    elif 'rustls' in j or 'aws_lc' in j:
        if re.search(r'sha256|HMAC|HKDF|hkdf|digest|hash',leaf,re.I): c='rustls: hash/hkdf'
        elif re.search(r'aes|gcm|aead',leaf,re.I): c='rustls: aead'
        elif re.search(r'malloc|free|memmove|memcpy|memset|tcache|realloc|unlink_chunk',leaf): c='rustls: alloc/copy'
        elif 'rdrand' in leaf or 'jent' in leaf or 'rol64' in leaf or 'DRBG' in leaf or 'rand' in leaf.lower(): c='rustls: rng'
        else: c='rustls: other'
    else:
        c='connstorm/libc other'
        sub[leaf.split('+')[0][:80]]+=1
    cat[c]+=1
for k,v in cat.most_common(): print(f"{100*v/tot:5.1f}%  {k}")
print('--- connstorm/libc other leafs')
for k,v in sub.most_common(15): print(f"{100*v/tot:5.2f}%  {k}")
