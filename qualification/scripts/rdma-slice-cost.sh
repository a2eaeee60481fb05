#!/bin/bash
# usage: qualification/scripts/rdma-slice-cost.sh CHECKOUT SECONDS DELAY WINDOW
# Per-slice CPU, bytes allocated, system calls and context switches of both engine processes of
# `./orbite bench rdma --engine-only --seconds SECONDS` run in CHECKOUT (built), in a WINDOW-second
# window DELAY seconds after it starts. Needs perf (linux-perf) and the JDK's jcmd; run as root.
dir=$1; secs=$2; delay=$3; win=$4
J=/usr/lib/jvm/temurin-25-jdk-amd64/bin
cd $dir
out=$(mktemp)
./orbite bench rdma --engine-only --seconds $secs > $out 2>&1 &
bp=$!
sleep $delay
pids=$(for p in $(pgrep java); do [ "$(readlink /proc/$p/cwd)" = "$PWD" ] || continue; grep -q plexus /proc/$p/cmdline && continue; echo $p; done)
alloc() { for p in $pids; do $J/jcmd $p Thread.print -e 2>/dev/null | grep -o 'allocated=[0-9]*[BKMG]'; done | python3 -c '
import sys
m={"B":1,"K":1024,"M":1<<20,"G":1<<30}; a=0
for l in sys.stdin: v=l.strip()[10:]; a+=int(v[:-1])*m[v[-1]]
print(a)'; }
procs() { t=0; c=0; for p in $pids; do for x in /proc/$p/task/*; do s=($(sed 's/.*) //' $x/stat 2>/dev/null)); t=$((t+${s[11]:-0}+${s[12]:-0})); v=$(awk '/ctxt_switches/{s+=$2}END{print s}' $x/status 2>/dev/null); c=$((c+${v:-0})); done; done; echo $t $c; }
t0=$(date +%s.%N); a0=$(alloc); t1=$(date +%s.%N)
p0=$(procs)
perf stat -x, -e raw_syscalls:sys_enter -p $(echo $pids | tr ' ' ',') -- sleep $win 2> /tmp/slicecost.perf
p1=$(procs)
t2=$(date +%s.%N); a1=$(alloc); t3=$(date +%s.%N)
wait $bp
rate=$(grep -o 'nullwire_slices .*= [0-9,]* slices/s' $out | grep -o '= [0-9,]*' | tr -d '=, ')
sc=$(grep raw_syscalls /tmp/slicecost.perf | cut -d, -f1)
python3 - "$p0" "$p1" "$rate" "$sc" "$win" "$a0" "$a1" "$t0" "$t1" "$t2" "$t3" <<'P'
import sys
p0=sys.argv[1].split(); p1=sys.argv[2].split(); rate=float(sys.argv[3]); sc=float(sys.argv[4]); w=float(sys.argv[5])
a0=int(sys.argv[6]); a1=int(sys.argv[7]); t0,t1,t2,t3=map(float,sys.argv[8:12])
n=rate*w
cpu=(int(p1[0])-int(p0[0]))/100.0; cs=int(p1[1])-int(p0[1])
na=rate*((t2+t3)/2-(t0+t1)/2)
print("rate %.0f slices/s; per slice: cpu %.1f us, allocated %.0f B, syscalls %.1f, context switches %.1f"%(rate,cpu*1e6/n,(a1-a0)/na,sc/n,cs/n))
P
grep 'slices_per_completion' $out
