# chute - see README.md.  `make help` lists the targets.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
# An interpreter that imports numpy: Debian's python3 sees Debian's
# packages, the python3 first on PATH may be another build.  Computed in
# each make, not inherited from a parent make that ran before `deps`.
PYTHON := $(or $(PYTHON),$(shell for p in /usr/bin/python3 python3; do \
	$$p -c 'import numpy' 2>/dev/null && { echo $$p; break; }; done),python3)

# What deps, tour and check run; tests/cli/makefile.bats puts stand-ins here.
INSTALL_DEPS ?= ./scripts/install-deps.sh
DEMO ?= ./scripts/demo.sh
RUN_TESTS ?= ./scripts/run-tests.sh --no-deps

CC ?= cc
PKGS = libarchive libzstd libxxhash jansson libturbojpeg libjpeg libpng libcurl
# pkg-config runs when make starts: on a fresh machine that is before
# `deps` has installed anything, so demo and test build in a second make,
# started after `deps`, which asks again.
PKG_MISSING := $(shell pkg-config --exists $(PKGS) 2>/dev/null || \
	for p in $(PKGS); do pkg-config --exists $$p 2>/dev/null || printf '%s ' $$p; done)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libcurl is loaded when a remote is first used (lib/store/curl_shim.c),
# libarchive when an archive is first read or written
# (lib/common/archive_shim.c), not linked: their libraries (OpenSSL, LDAP;
# libxml2, ICU, libstdc++) would slow the start of every command.
LOADED := libcurl libarchive
PKG_LIBS := $(shell pkg-config --libs $(filter-out $(LOADED),$(PKGS)) 2>/dev/null)
# Stops a compile or a link that would fail on a missing library with a
# screen of undefined references; expanded only when such a rule runs.
need_pkgs = $(if $(strip $(PKG_MISSING)),$(error pkg-config cannot find \
	$(strip $(PKG_MISSING)) (is pkg-config installed?): run 'make deps' \
	or scripts/install-deps.sh as root first))

WERROR ?= -Werror
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra $(WERROR) -Iinclude $(PKG_CFLAGS)
LDLIBS += $(PKG_LIBS) -lpthread -lm -ldl

# A sanitizer build lives in its own folder: make SANITIZE=address,undefined
BUILD ?= build
ifdef SANITIZE
BUILD := build-san
CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
# What a sanitized process pays at exit, when LeakSanitizer scans every
# module's globals: the untouched ones are page faults, about 25 us each
# on a small VM.  gcc's shared libubsan brings 6 MB of them (its own
# runtime's tables, unused beside ASan's): linked statically, only the
# handlers come along.  Without PIE, ASan's instrumented globals need no
# relocation at start.  A sanitized chute --version: 4,600 page faults
# and ~95 ms of CPU before, 2,700 and ~60 ms after; the checks are the same.
# libasan likewise: linked statically, its symbols need no dynamic
# relocation at start (a --version: 2,500 page faults before, 2,314
# after; CPU time too noisy here to tell), and the sanitizer pass starts
# chute thousands of times.
ifeq (,$(findstring clang,$(shell $(CC) --version 2>/dev/null)))
ifneq (,$(findstring undefined,$(SANITIZE)))
LDFLAGS += -static-libubsan
endif
ifneq (,$(findstring address,$(SANITIZE)))
LDFLAGS += -static-libasan
endif
endif
LDFLAGS += -no-pie
# Prefaults the zero page under the globals LeakSanitizer reads at exit
# (tests/san_prefault.c): ~10 ms less CPU a sanitized start.
SAN_OBJ := $(BUILD)/tests/san_prefault.o
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

LIB_SRC := $(wildcard lib/*/*.c)
CMD_SRC := $(wildcard cmd/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CMD_OBJ := $(CMD_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
MAN_PAGES := $(wildcard man/*.1 man/*.5 man/*.7)
# The version lives in CH_VERSION alone (README.md, "Releasing"); the man
# pages' .TH lines say "chute" and get it when installed.
VERSION := $(shell sed -n 's/^\#define CH_VERSION "\([^"]*\)".*/\1/p' \
	$(wildcard include/*.h include/chute/*.h))

## all: build the chute binary (build/chute) and the test drivers
all: $(BUILD)/chute $(BUILD)/tests/store_tool $(BUILD)/tests/options_tool

HEADERS := $(wildcard include/*.h include/chute/*.h lib/*/*.h cmd/*.h)

# The public boundary: lib/ sees its own headers (-Ilib), cmd/ sees only
# include/, so a private header included from cmd/ does not compile.
$(BUILD)/lib/%.o: lib/%.c $(HEADERS)
	$(need_pkgs)@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -Ilib -c -o $@ $<

$(BUILD)/cmd/%.o: cmd/%.c $(HEADERS)
	$(need_pkgs)@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/libchute.a: $(LIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/chute: $(CMD_OBJ) $(BUILD)/libchute.a $(SAN_OBJ)
	$(need_pkgs)@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(CMD_OBJ) $(SAN_OBJ) $(BUILD)/libchute.a $(LDLIBS)

$(BUILD)/tests/san_prefault.o: tests/san_prefault.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c tests/unit/unit.h tests/jpeg_compare.h $(BUILD)/libchute.a $(SAN_OBJ)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Ilib -Itests/unit $(LDFLAGS) -o $@ $< $(SAN_OBJ) $(BUILD)/libchute.a $(LDLIBS)

# The store's test driver (tests/cli/store.bats); not installed.  -Ilib:
# it calls store/testing.h.
$(BUILD)/tests/store_tool: tests/store_tool.c $(BUILD)/libchute.a $(SAN_OBJ)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Ilib $(LDFLAGS) -o $@ $< $(SAN_OBJ) $(BUILD)/libchute.a $(LDLIBS)

# The option tables' test driver (tests/cli/docs.bats); not installed.
$(BUILD)/tests/options_tool: tests/options_tool.c $(filter-out $(BUILD)/cmd/main.o,$(CMD_OBJ)) $(BUILD)/libchute.a
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(filter-out $(BUILD)/cmd/main.o,$(CMD_OBJ)) $(BUILD)/libchute.a $(LDLIBS)

## deps: install the Debian packages chute needs (as root)
deps:
	$(INSTALL_DEPS)

## test: install dependencies, build, run unit, CLI and sanitizer tests
test: deps
	+$(MAKE) --no-print-directory check

## check: run the tests without installing dependencies
check: all $(UNIT_BIN)
	PYTHON=$(PYTHON) $(RUN_TESTS)

## unit: build and run the unit tests
unit: $(UNIT_BIN)
	@for t in $(UNIT_BIN); do $$t || exit 1; done

## demo: install dependencies, build, tour a sample dataset (pack, verify, split, check, stream)
demo: deps
	+$(MAKE) --no-print-directory tour

## tour: the demo without installing dependencies
tour: all
	PYTHON=$(PYTHON) $(DEMO) $(BUILD)/chute

## bench: pack/verify vs tar|zstd, xxhsum, cat; stream vs DataLoader, numpy, cat; transforms vs DataLoader, TurboJPEG; --shm vs pipe; chute.Stream from Python; chute.Dataset at random vs arrays; the first epoch vs its limit
bench: all
	PYTHON=$(PYTHON) ./scripts/bench-pack.sh $(BUILD)/chute
	PYTHON=$(PYTHON) ./scripts/bench-stream.sh $(BUILD)/chute
	PYTHON=$(PYTHON) ./scripts/bench-check.sh $(BUILD)/chute
	PYTHON=$(PYTHON) ./scripts/bench-transform.sh $(BUILD)/chute
	PYTHON=$(PYTHON) ./scripts/bench-shm.sh $(BUILD)/chute
	PYTHON=$(PYTHON) ./scripts/bench-remote.sh $(BUILD)/chute
	PYTHON=$(PYTHON) ./scripts/bench-python.sh $(BUILD)/chute
	PYTHON=$(PYTHON) ./scripts/bench-dataset.sh $(BUILD)/chute
	PYTHON=$(PYTHON) ./scripts/bench-mix.sh $(BUILD)/chute
	PYTHON=$(PYTHON) ./scripts/bench-verify.sh $(BUILD)/chute
	PYTHON=$(PYTHON) ./scripts/bench-epoch.sh $(BUILD)/chute

## fuzz: run each libFuzzer target for FUZZ_SECONDS (default 60)
FUZZ_SECONDS ?= 60
fuzz:
	PYTHON=$(PYTHON) ./scripts/run-fuzz.sh $(FUZZ_SECONDS)

# Where `make install` puts the Python package: Debian's python3 looks in
# PREFIX/lib/python3.X/dist-packages (3.X: the version of $(PYTHON)).
PY_SRC := $(wildcard python/chute/*.py)
PYTHONDIR ?= $(PREFIX)/lib/python$(shell $(PYTHON) -c \
	'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3)/dist-packages

## install: install the binary, the man pages and the Python package (PYTHONDIR) under $(DESTDIR)$(PREFIX)
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5
	install -m 755 $(BUILD)/chute $(DESTDIR)$(BINDIR)/chute
	for m in $(MAN_PAGES); do \
		d=$(DESTDIR)$(MANDIR)/man$${m##*.}; install -d $$d; \
		sed '/^\.TH /s/"chute"/"chute $(VERSION)"/' $$m >$$d/$${m##*/} && \
		chmod 644 $$d/$${m##*/} || exit 1; done
	install -d $(DESTDIR)$(PYTHONDIR)/chute
	install -m 644 $(PY_SRC) python/chute/py.typed $(DESTDIR)$(PYTHONDIR)/chute/

# The platform wheel: the package, the binary (pip puts it in the
# environment's bin/) and the man pages (share/man), built by the package's
# own backend.  The binary links Debian's libzstd, jansson, libturbojpeg,
# libpng...: a wheel for machines that have them, not a manylinux one.
# `pip install ./python` builds the pure one (py3-none-any), without them.
DIST ?= dist

## wheel: build dist/chute-VERSION-py3-none-PLATFORM.whl, the Python package with the binary and man pages (pip install it)
wheel: $(BUILD)/chute
	$(PYTHON) python/_build/chute_build.py --binary $(BUILD)/chute --man man -o $(DIST)

## uninstall: remove what install put in place
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/chute
	for m in $(MAN_PAGES); do s=$${m##*.}; \
		rm -f $(DESTDIR)$(MANDIR)/man$$s/$${m##*/}; done
	rm -rf $(DESTDIR)$(PYTHONDIR)/chute

## clean: remove build outputs
clean:
	rm -rf build build-san build-fuzz $(DIST)

## version: print the version (CH_VERSION)
version:
	@echo $(VERSION)

## help: list the targets
help:
	@sed -n 's/^## //p' Makefile

.PHONY: all deps test check unit demo tour bench fuzz install wheel uninstall clean version help
