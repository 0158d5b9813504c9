/**
 * A kernel that goes looking for credentials, as an attacker's would: it walks up from its work
 * directory printing every runtime file it finds, and reads its agent's environment, argv and
 * descriptors. Each section starts with a `== ` line naming what follows.
 */
export const LOOK_AROUND = `
echo "== own descriptors"; ls /proc/$$/fd
d="$PWD"
while [ "$d" != "/" ]; do
  if [ -f "$d/runtime.json" ]; then echo "== runtime file $d/runtime.json"; cat "$d/runtime.json" 2>&1; fi
  d=$(dirname "$d")
done
echo "== agent environment"; cat /proc/$PPID/environ 2>&1 | tr '\\0' '\\n'
echo "== agent argv"; cat /proc/$PPID/cmdline 2>&1 | tr '\\0' ' '; echo
echo "== agent descriptors"; ls /proc/$PPID/fd 2>&1
echo "== uid $(id -u)"
`;
