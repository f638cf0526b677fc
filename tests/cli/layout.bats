#!/usr/bin/env bats
# scripts/check-layout.py: the real tree keeps its shape (cmd/ behind the
# public headers, modules calling only what their README allows, no
# circles among the files of lib/ and cmd/, no function that nothing
# calls), and each kind of breach, planted in a small tree of its own,
# fails with exit 1 naming the file.

load helper

LAYOUT="$REPO_ROOT/scripts/check-layout.py"

# obj SRC: compiles ROOT's SRC (lib/MOD/F.c or cmd/F.c) to ROOT/build/*.o.
obj() {
	mkdir -p "root/build/$(dirname "$1")"
	"${CC:-cc}" -Iroot/include -c -o "root/build/${1%.c}.o" "root/$1" ||
		fail "cc -c $1 failed"
}

# A tree that passes: module a calls nothing, cmd/main.c calls a through
# a public header.
plant() {
	mkdir -p root/include root/cmd root/lib/a
	printf 'int a_f(void);\n' >root/include/pub.h
	printf '# lib/\n' >root/lib/README.md
	printf '# a/\n\nMay call: nothing\n' >root/lib/a/README.md
	printf 'int a_f(void) { return 0; }\n' >root/lib/a/a.c
	printf '#include "pub.h"\nint main(void) { return a_f(); }\n' \
		>root/cmd/main.c
	obj lib/a/a.c
	obj cmd/main.c
}

# module b: a README saying "May call: $1", b.c calling a_f, main
# calling b_f.
module_b() {
	mkdir -p root/lib/b
	printf '# b/\n\nMay call: %s\n' "$1" >root/lib/b/README.md
	printf 'int a_f(void);\nint b_f(void) { return a_f(); }\n' \
		>root/lib/b/b.c
	printf 'int b_f(void);\nint main(void) { return b_f(); }\n' \
		>root/cmd/main.c
	obj lib/b/b.c
	obj cmd/main.c
}

layout() {
	run "$PYTHON" "$LAYOUT" --root root build
}

@test "layout: the real tree keeps its shape" {
	run "$PYTHON" "$LAYOUT" build
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"boundary, calls and no circles ok"* ]]
	[[ "$output" == *" functions, each called"* ]]
	[[ "$output" == *" public headers, each declaring its module's own"* ]]
}

@test "layout: a planted tree that keeps the rules passes" {
	plant
	module_b a
	layout
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"2 files in 2 modules and 1 in cmd/"* ]]
}

@test "layout: cmd/ including a private header fails" {
	plant
	printf '#include "common/internal.h"\n' >root/cmd/bad.c
	layout
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *'cmd/bad.c: includes "common/internal.h"'* ]]
}

@test "layout: a module folder without README.md fails" {
	plant
	mkdir root/lib/b
	layout
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"lib/b/: no README.md"* ]]
}

@test "layout: a module README without its May call: line fails" {
	plant
	mkdir root/lib/b
	printf '# b/\n\nCalls what it likes.\n' >root/lib/b/README.md
	layout
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *'lib/b/README.md: no "May call:" line'* ]]
}

@test "layout: a module calling one its README does not allow fails" {
	plant
	module_b nothing
	layout
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"lib/b/b.c calls a_f (lib/a/a.c): module b may not call a (lib/b/README.md)"* ]]
}

@test "layout: two files of lib/ calling each other are a circle" {
	plant
	printf 'int q_f(void);\nint p_f(void) { return q_f(); }\n' \
		>root/lib/a/p.c
	printf 'int p_f(void);\nint q_f(void) { return 1 + p_f(); }\n' \
		>root/lib/a/q.c
	obj lib/a/p.c
	obj lib/a/q.c
	layout
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"circle: lib/a/p.c -> lib/a/q.c (q_f); lib/a/q.c -> lib/a/p.c (p_f)"* ]]
}

@test "layout: two files of cmd/ calling each other are a circle" {
	plant
	printf 'int y_f(void);\nint x_f(void) { return y_f(); }\n' \
		>root/cmd/x.c
	printf 'int x_f(void);\nint y_f(void) { return 1 + x_f(); }\n' \
		>root/cmd/y.c
	obj cmd/x.c
	obj cmd/y.c
	layout
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"circle: cmd/x.c -> cmd/y.c (y_f); cmd/y.c -> cmd/x.c (x_f)"* ]]
}

@test "layout: a function nothing calls fails, naming it" {
	plant
	printf '/* a_dead() */\nint a_dead(void) { return 1; }\n' \
		>root/lib/a/dead.c
	obj lib/a/dead.c
	layout
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"lib/a/dead.c: a_dead is defined but nothing calls it"* ]]
}

@test "layout: a function used only in its own file must be static" {
	plant
	printf '%s\n' 'int a_own(void);' 'int a_own(void) { return 2; }' \
		'static int a_g(void) { return a_own(); }' \
		'int a_h(void) { return a_g(); }' >root/lib/a/own.c
	obj lib/a/own.c
	layout
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"lib/a/own.c: a_own is used only in its own file: make it static"* ]]
	[[ "$output" == *"lib/a/own.c: a_h is defined but nothing calls it"* ]]
	[[ "$output" != *a_g* ]]
}

@test "layout: a function only tests call is declared in the testing header" {
	plant
	printf 'int a_t(void) { return 3; }\n' >root/lib/a/t.c
	obj lib/a/t.c
	mkdir -p root/tests/unit
	printf 'int a_t(void);\nint main(void) { return a_t(); }\n' \
		>root/tests/unit/test_a.c
	layout
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"lib/a/t.c: a_t is called only by tests: declare it in lib/a/testing.h"* ]]
	printf '/* for tests */\nint a_t(void);\n' >root/lib/a/testing.h
	layout
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "layout: a module header declares only what its module defines" {
	plant
	module_b a
	mkdir -p root/include/chute
	printf '%s\n' '/* a/ */' 'int a_f(void);' 'typedef int (*a_fn)(void);' \
		'static inline int a_g(void) { return 1; }' >root/include/chute/a.h
	printf '%s\n' 'struct b { int (*f)(void); };' 'int b_f(void);' \
		>root/include/chute/b.h
	printf '#define B_MAX 3\n' >root/include/chute/b_limits.h
	layout
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"3 public headers, each declaring its module's own"* ]]
	printf 'int b_f(void);\nint a_f(void);\nint b_gone(void);\n' \
		>root/include/chute/b.h
	printf 'int b_f(void);\n' >root/include/chute/misc.h
	layout
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"include/chute/b.h: declares a_f, defined in lib/a/a.c, not in lib/b/"* ]]
	[[ "$output" == *"include/chute/b.h: declares b_gone, which nothing defines"* ]]
	[[ "$output" == *"include/chute/misc.h: names no module of lib/"* ]]
	[[ "$output" != *"declares b_f"* ]]
}

@test "layout: a tree without objects cannot be checked (exit 2)" {
	plant
	rm -r root/build
	layout
	[ "$status" -eq 2 ]
	[[ "$output" == *"run make first"* ]]
}

# scripts/check-failures.py (issue 34, item 3): a failure leaves a
# command as a struct ch_error whose kind cmd_exit_status alone turns into
# an exit status, and lib/ messages name no command-line flag.
FAILURES="$REPO_ROOT/scripts/check-failures.py"

failures() {
	run "$PYTHON" "$FAILURES" --root root
	echo "$output"
}

# A cmd/ and lib/ that keep the rules: the body fails through cmd_fail,
# out.c maps kinds by a table, lib/ names its setting by key.
plant_failures() {
	mkdir -p root/cmd root/lib/a
	cat >root/cmd/x.c <<'C'
static const struct cmd_opt x_opts[] = {
	CMD_OPT_U64(0, "seed", "N", T, seed, 0, UINT64_MAX, "the seed"),
	CMD_OPT_END,
};

int cmd_x(int argc)
{
	struct ch_error err;
	int status = cmd_parse_args(&x_spec, argc, argv, &a);
	if (status != 0)
		return cmd_parsed_status(status);
	if (argc > 3)
		return cmd_fail((ch_error_usage(&err, "too many"), &err));
	return 0;
}
C
	printf 'static const int kind_status[] = {[CH_ERR_DATA] = EXIT_CHECK};\n' \
		>root/cmd/out.c
	printf 'int a_f(struct ch_error *e)\n{\n\tch_error_usage(e, "seed: at most 2^63-1");\n\treturn ch_error_setting(e, "seed");\n}\n' \
		>root/lib/a/a.c
}

@test "failures: the real tree reports failures one way, and lib/ names no flag" {
	run "$PYTHON" "$FAILURES"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "failures ok: "* ]]
	# the issue's own grep
	run grep -rnE 'return EXIT_|return cmd_error|< 0 \? 0' "$REPO_ROOT/cmd"
	[ "$status" -eq 1 ]
}

@test "failures: an exit status made in cmd/, or a flag in lib/, fails naming the line" {
	plant_failures
	failures
	[ "$status" -eq 0 ]
	sed -i 's/return cmd_fail((ch_error_usage(&err, "too many"), &err));/return cmd_error("too many");/' root/cmd/x.c
	failures
	[ "$status" -eq 1 ]
	[[ "$output" == *"cmd/x.c:13: return cmd_error(...)"* ]]
	plant_failures
	sed -i 's/return cmd_parsed_status(status);/return status < 0 ? 0 : status;/' root/cmd/x.c
	failures
	[ "$status" -eq 1 ]
	[[ "$output" == *"cmd/x.c:11: an exit status made by hand (< 0 ? 0)"* ]]
	plant_failures
	sed -i 's/^\treturn 0;$/\treturn argc ? EXIT_CHECK : 0;/' root/cmd/x.c
	failures
	[ "$status" -eq 1 ]
	[[ "$output" == *"cmd/x.c:14: an exit status outside cmd_exit_status"* ]]
	# the map itself is a table: a switch returning codes is not
	plant_failures
	printf 'int cmd_kind_status(int kind)\n{\n\treturn EXIT_USAGE;\n}\n' >>root/cmd/out.c
	failures
	[ "$status" -eq 1 ]
	[[ "$output" == *"cmd/out.c:4: return EXIT_...: give the failure its kind"* ]]
	[[ "$output" != *"cmd/out.c:1:"* ]]
	plant_failures
	sed -i 's/"seed: /"--seed /' root/lib/a/a.c
	failures
	[ "$status" -eq 1 ]
	[[ "$output" == *'lib/a/a.c:3: a message names a command-line flag: "--seed at most 2^63-1"'* ]]
}

@test "failures: a lib/ setting that no option of cmd/ sets fails" {
	plant_failures
	sed -i 's/ch_error_setting(e, "seed")/ch_error_setting(e, "sed")/' root/lib/a/a.c
	failures
	[ "$status" -eq 1 ]
	[[ "$output" == *"lib/a/a.c:4: setting 'sed' is no option of cmd/'s tables"* ]]
	plant_failures
	sed -i 's/ch_error_setting(e, "seed")/ch_error_remedy(e, "seed sed")/' root/lib/a/a.c
	failures
	[ "$status" -eq 1 ]
	[[ "$output" == *"setting 'sed' is no option"* ]]
}
