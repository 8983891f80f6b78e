#!/bin/sh
# tests/cli/doc_examples.sh fails on a broken example: a page with a good
# and a bad block of each kind gives exactly the expected TAP lines, naming
# file and line; the blocks of a page share one shell (directory, exports)
# that starts clean; prompts and output are told apart; a "# needs" block is
# parsed, not run; a fence without a language and a broken link fail.
. "$(dirname "$0")/tap.sh"
DOC="$(dirname "$0")/doc_examples.sh"
cat >"$WORK/page.md" <<'EOT'
# a page [on the web](https://example.org/x), [missing](no-such-page.md#part) and `[code](not-a-link)`

```sh
echo made >made.txt
export CRUX_DOC_SELF=carried
mkdir sub && cd sub
```

```sh
test -s ../made.txt && test "$CRUX_DOC_SELF" = carried && test "$(basename "$PWD")" = sub
false
```

```console
$ echo hi
hi
$ test -z "${CRUX_DOC_LEAK:-}" && \
    test "$HOME" != "$CRUX_DOC_REAL_HOME"
$ crux-sched --version
crux-sched (crux) 0.1.0
```

```console
# needs a GPU
nvidia-smi --no-such-option-here
```

```console
# needs root
if then (
```

```console
crux-no-such-tool --help
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
# needs a cluster
crux-sched plan --cluster examples/no-such-cluster.json
```

```
a fence without a language
```

```text
not checked
```
EOT
CRUX_DOC_LEAK=leaked CRUX_DOC_REAL_HOME=$HOME bash "$DOC" "$WORK/page.md" >"$WORK/tap" 2>&1
rc=$?
check "exits non-zero" test $rc -ne 0
want() { grep -q "^$1 [0-9]* - .*page.md:$2: $3" "$WORK/tap" || { cat "$WORK/tap"; return 1; }; }
check "sh that succeeds: ok" want ok 3 runs
check "the next block sees its directory and exports; a failing one: not ok" want "not ok" 9 runs
check "prompts: only commands run, in a clean environment, the installed tools on PATH" want ok 14 runs
check "# needs: not run, parsed: ok" want ok 23 "not run (needs a GPU), parses"
check "# needs, not parsing: not ok" want "not ok" 28 "not run (needs root), parses"
check "a command that fails: not ok, with the file, the line and what to do" sh -c "
  grep -q '^not ok [0-9]* - .*page.md:33: runs' '$WORK/tap' &&
  grep -q '^# .*page.md:33: exit status 127 of:' '$WORK/tap' && grep -q '^# to fix: ' '$WORK/tap' &&
  grep -q '^# \"# needs REASON\"' '$WORK/tap'"
check "json that parses: ok" want ok 37 "json parses"
check "json that does not parse: not ok" want "not ok" 41 "json parses"
check "indented JSON lines: ok" want ok 45 "json parses"
check "a block naming a missing example: not ok" want "not ok" 50 "names examples that exist"
check "a fence without a language: not ok" want "not ok" 55 "says what it is"
check "a link to a missing page: not ok, naming it" sh -c "grep -q '^not ok [0-9]* - .*page.md: links resolve' '$WORK/tap' &&
  grep -q '^# missing: no-such-page.md\$' '$WORK/tap' && ! grep -q 'missing: https' '$WORK/tap' && ! grep -q 'not-a-link' '$WORK/tap'"
check "text blocks make no line; plan 1..12" sh -c "grep -c '^\(ok\|not ok\) ' '$WORK/tap' | grep -qx 12 && grep -qx '1..12' '$WORK/tap'"
tap_done
