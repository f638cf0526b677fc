# chute - see README.md.  `make help` lists the targets.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
PYTHON ?= $(shell for p in /usr/bin/python3 python3; do $$p -c 'import numpy' 2>/dev/null && { echo $$p; break; }; done)
export PYTHON

CC ?= cc
PKGS = libarchive libzstd libxxhash jansson libturbojpeg libjpeg libpng libcurl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libcurl is loaded when a remote is first used (lib/curl_shim.c), not
# linked: its 27 libraries would slow the start of every command.
PKG_LIBS := $(shell pkg-config --libs $(filter-out libcurl,$(PKGS)) 2>/dev/null)

WERROR ?= -Werror
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra $(WERROR) -Ilib $(PKG_CFLAGS)
LDLIBS += $(PKG_LIBS) -lpthread -lm -ldl

# A sanitizer build lives in its own folder: make SANITIZE=address,undefined
BUILD ?= build
ifdef SANITIZE
BUILD := build-san
CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

LIB_SRC := $(wildcard lib/*.c)
CMD_SRC := $(wildcard cmd/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CMD_OBJ := $(CMD_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
MAN_PAGES := $(wildcard man/*.1 man/*.5 man/*.7)

## all: build the chute binary (build/chute) and the test driver of lib/store.h
all: $(BUILD)/chute $(BUILD)/tests/store_tool

$(BUILD)/%.o: %.c lib/chute.h $(wildcard lib/*.h cmd/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/libchute.a: $(LIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/chute: $(CMD_OBJ) $(BUILD)/libchute.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(CMD_OBJ) $(BUILD)/libchute.a $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c tests/unit/unit.h tests/jpeg_compare.h $(BUILD)/libchute.a
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(BUILD)/libchute.a $(LDLIBS)

# The store's test driver (tests/cli/store.bats); not installed.
$(BUILD)/tests/store_tool: tests/store_tool.c $(BUILD)/libchute.a
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libchute.a $(LDLIBS)

## deps: install the Debian packages chute needs (as root)
deps:
	./scripts/install-deps.sh

## test: install dependencies, build, run unit, CLI and sanitizer tests
test: deps
	./scripts/run-tests.sh --no-deps

## check: run the tests without installing dependencies
check: all $(UNIT_BIN)
	./scripts/run-tests.sh --no-deps

## unit: build and run the unit tests
unit: $(UNIT_BIN)
	@for t in $(UNIT_BIN); do $$t || exit 1; done

## demo: install dependencies, build, tour a sample dataset (pack, verify, split, check, stream)
demo: deps all
	./scripts/demo.sh $(BUILD)/chute

## bench: pack/verify vs tar|zstd, xxhsum, cat; stream vs DataLoader, numpy, cat; transforms vs DataLoader, TurboJPEG; --shm vs pipe
bench: all
	./scripts/bench-pack.sh $(BUILD)/chute
	./scripts/bench-stream.sh $(BUILD)/chute
	./scripts/bench-check.sh $(BUILD)/chute
	./scripts/bench-transform.sh $(BUILD)/chute
	./scripts/bench-shm.sh $(BUILD)/chute
	./scripts/bench-remote.sh $(BUILD)/chute

## fuzz: run each libFuzzer target for FUZZ_SECONDS (default 60)
FUZZ_SECONDS ?= 60
fuzz:
	./scripts/run-fuzz.sh $(FUZZ_SECONDS)

## install: install the binary and man pages under $(DESTDIR)$(PREFIX)
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5
	install -m 755 $(BUILD)/chute $(DESTDIR)$(BINDIR)/chute
	for m in $(MAN_PAGES); do \
		s=$${m##*.}; install -d $(DESTDIR)$(MANDIR)/man$$s; \
		install -m 644 $$m $(DESTDIR)$(MANDIR)/man$$s/; done

## uninstall: remove what install put in place
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/chute
	for m in $(MAN_PAGES); do s=$${m##*.}; \
		rm -f $(DESTDIR)$(MANDIR)/man$$s/$${m##*/}; done

## clean: remove build outputs
clean:
	rm -rf build build-san build-fuzz

## help: list the targets
help:
	@sed -n 's/^## //p' Makefile

.PHONY: all deps test check unit demo bench fuzz install uninstall clean help
