#!/bin/sh
# tests/cli/doc_examples.sh fails on a broken example: a page with one good
# and one bad block of each kind, and a broken link, gives exactly the
# expected TAP lines.
. "$(dirname "$0")/sched_tap.sh"
DOC="$(dirname "$0")/doc_examples.sh"
cat >"$WORK/page.md" <<'EOT'
# a page [on the web](https://example.org/x), [missing](no-such-page.md#part) and `[code](not-a-link)`

```sh
echo made >made.txt
```

```sh
test -s made.txt
false
```

```json
{"a": [1, 2]}
```

```json
{"a": [1, 2}
```

  ```json
  {"indented": true}
  {"second": "line"}
  ```

```console
crux-sched plan --cluster examples/clos2.json
```

```console
crux-sched plan --cluster examples/no-such-cluster.json
```

```text
not checked
```
EOT
bash "$DOC" "$WORK/page.md" >"$WORK/tap" 2>&1
rc=$?
check "exits non-zero" test $rc -ne 0
want() { grep -q "^$1 [0-9]* - .*page.md:$2: $3" "$WORK/tap" || { cat "$WORK/tap"; return 1; }; }
check "sh that succeeds: ok" want ok 3 sh
check "sh blocks share the page's directory; a failing one: not ok" want "not ok" 7 sh
check "json that parses: ok" want ok 12 json
check "json that does not parse: not ok" want "not ok" 16 json
check "indented JSON lines: ok" want ok 20 json
check "console naming an example that exists: ok" want ok 25 console
check "console naming a missing example: not ok" want "not ok" 29 console
check "a link to a missing page: not ok, naming it" sh -c "grep -q '^not ok [0-9]* - .*page.md: links resolve' '$WORK/tap' &&
  grep -q '^# missing: no-such-page.md\$' '$WORK/tap' && ! grep -q 'missing: https' '$WORK/tap' && ! grep -q 'not-a-link' '$WORK/tap'"
check "text blocks make no line; plan 1..8" sh -c "grep -c '^\(ok\|not ok\) ' '$WORK/tap' | grep -qx 8 && grep -qx '1..8' '$WORK/tap'"
tap_done
