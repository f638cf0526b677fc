/*
 * fault.c - a file that shrinks under one of chute's mappings is an
 * error, not a death by SIGBUS (issue 38).
 *
 * chute reads some files through mappings: a local shard's raw blocks
 * (lib/shard/reader.c), text given back a page at a time
 * (lib/common/fsutil.c), verify's windows (lib/check/verify.c), and it
 * writes the --shm ring through one (lib/stream/shm_ring.c).  When such a
 * file is truncated (truncate(1), or cp over it, which truncates first;
 * a --shm consumer that ftruncates the ring), the next touch of a page
 * past its new end raises SIGBUS, whose default action kills chute
 * without a word (exit 135) and leaves the ring in /dev/shm.
 *
 * The handler installed here (SA_SIGINFO) turns that into the error
 * chute would have given had it read the file with pread: one line on
 * stderr naming the file and the byte that is gone, the ring removed,
 * and exit 1 (the data changed under chute) or 2 (the ring was truncated
 * by its consumer, or a bus error chute cannot place).
 *
 * Which file: the registry of mapped ranges is the kernel's own,
 * /proc/self/maps, read in the handler (open, read, close: async-signal-
 * safe), where the line whose range holds si_addr names the file and
 * the file offset of the mapping.  So lib/ keeps no registry and no hook
 * (it has no global mutable state, STYLE.md), and a mapping added to lib/
 * later is covered without a change here.  The one thing cmd/ tells the
 * handler is the ring it made (cmd_fault_ring), to remove it and to call
 * a fault in it the consumer's doing.  Paths under the folder chute was
 * started in are shown relative to it, as the user gave them.
 *
 * Everything in the handler is async-signal-safe: no stdio, no malloc,
 * only open, read, close, write, unlink and _exit, on static buffers.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

#define RING_DIR "/dev/shm/chute-"

static char start_dir[PATH_MAX];
static size_t start_dir_len;

/* the --shm ring's path, valid while ring_set */
static char ring_path[sizeof RING_DIR + 256];
static char ring_name[256];
static int ring_set;

static int in_fault; /* the first faulting thread reports, others wait */

/* A line of text built without stdio. */
struct line {
	char buf[PATH_MAX + 512];
	size_t len;
};

static void put_str(struct line *l, const char *s)
{
	while (*s && l->len < sizeof l->buf - 1)
		l->buf[l->len++] = *s++;
}

static void put_num(struct line *l, uint64_t v, unsigned base)
{
	char digits[24];
	int n = 0;
	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n > 0 && l->len < sizeof l->buf - 1)
		l->buf[l->len++] = digits[--n];
}

/* A path as the user would have written it: relative to the folder
 * chute started in when it lies under it. */
static void put_path(struct line *l, const char *path)
{
	if (start_dir_len > 1 && strncmp(path, start_dir, start_dir_len) == 0 &&
	    path[start_dir_len] == '/')
		path += start_dir_len + 1;
	put_str(l, path);
}

static uint64_t parse_hex(const char **p)
{
	uint64_t v = 0;
	for (;; (*p)++) {
		char c = **p;
		if (c >= '0' && c <= '9')
			v = v * 16 + (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uint64_t)(c - 'a' + 10);
		else
			return v;
	}
}

static const char *skip_field(const char *p)
{
	while (*p && *p != ' ')
		p++;
	while (*p == ' ')
		p++;
	return p;
}

/* One line of /proc/self/maps, "start-end perms offset dev inode path":
 * 1 if its range holds addr (path and the file offset of addr filled). */
static int match_line(char *s, uintptr_t addr, char *path, size_t room,
		      uint64_t *offset)
{
	const char *p = s;
	uint64_t start = parse_hex(&p);
	if (*p++ != '-')
		return 0;
	uint64_t end = parse_hex(&p);
	if (addr < start || addr >= end)
		return 0;
	while (*p == ' ')
		p++;
	p = skip_field(p); /* perms */
	*offset = parse_hex(&p) + (addr - start);
	p = skip_field(p); /* offset */
	p = skip_field(p); /* dev */
	p = skip_field(p); /* inode */
	size_t n = strlen(p);
	static const char deleted[] = " (deleted)";
	if (n >= sizeof deleted - 1 &&
	    strcmp(p + n - (sizeof deleted - 1), deleted) == 0)
		n -= sizeof deleted - 1;
	if (n >= room)
		n = room - 1;
	memcpy(path, p, n);
	path[n] = '\0';
	return 1;
}

/* The file mapped at addr and the offset of addr in it: 1, or 0 when
 * /proc cannot say (path empty for an anonymous mapping). */
static int find_mapping(uintptr_t addr, char *path, size_t room,
			uint64_t *offset)
{
	static char chunk[4096], text[PATH_MAX + 256];
	size_t len = 0, skip = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	ssize_t n;
	if (fd < 0)
		return 0;
	while ((n = read(fd, chunk, sizeof chunk)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (chunk[i] != '\n') {
				if (len < sizeof text - 1)
					text[len++] = chunk[i];
				else
					skip = 1; /* longer than a path */
				continue;
			}
			text[len] = '\0';
			if (!skip && match_line(text, addr, path, room, offset)) {
				close(fd);
				return 1;
			}
			len = skip = 0;
		}
	}
	close(fd);
	return 0;
}

static void on_bus(int sig, siginfo_t *si, void *ctx)
{
	static char path[PATH_MAX + 1];
	static struct line l;
	uint64_t offset = 0;
	enum ch_error_kind kind = CH_ERR_IO;
	int ring = __atomic_load_n(&ring_set, __ATOMIC_ACQUIRE);
	const char *name = cmd_name();
	(void)ctx;

	if (__atomic_exchange_n(&in_fault, 1, __ATOMIC_ACQ_REL))
		for (;;)
			pause(); /* another thread reports and exits */
	if (ring)
		unlink(ring_path);
	if (si->si_code <= 0) {
		/* sent, not a fault (kill -BUS): die of it, ring removed */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		sigaction(sig, &dfl, NULL);
		raise(sig);
		return;
	}
	path[0] = '\0';
	int found = find_mapping((uintptr_t)si->si_addr, path, sizeof path,
				 &offset);
	put_str(&l, "chute ");
	put_str(&l, name ? name : "");
	put_str(&l, name ? ": " : "");
	if (found && ring && strcmp(path, ring_path) == 0) {
		put_str(&l, "ring '");
		put_str(&l, ring_name);
		put_str(&l, "' (");
		put_str(&l, ring_path);
		put_str(&l, ") was truncated while chute wrote it (its byte ");
		put_num(&l, offset, 10);
		put_str(&l, " is gone): a consumer must not resize the ring; "
			    "the stream stops");
	} else if (found && path[0] == '/' && si->si_code == BUS_ADRERR) {
		put_str(&l, "'");
		put_path(&l, path);
		put_str(&l, "' changed while it was read (truncated or "
			    "overwritten): its byte ");
		put_num(&l, offset, 10);
		put_str(&l, " is gone; run again on whole data");
		kind = CH_ERR_DATA;
	} else {
		put_str(&l, "bus error (SIGBUS code ");
		put_num(&l, (uint64_t)si->si_code, 10);
		put_str(&l, ") at address 0x");
		put_num(&l, (uint64_t)(uintptr_t)si->si_addr, 16);
		if (found && path[0]) {
			put_str(&l, " in '");
			put_path(&l, path);
			put_str(&l, "' at byte ");
			put_num(&l, offset, 10);
		}
	}
	l.buf[l.len++] = '\n';
	for (size_t at = 0; at < l.len;) {
		ssize_t w = write(STDERR_FILENO, l.buf + at, l.len - at);
		if (w <= 0)
			break;
		at += (size_t)w;
	}
	_exit(cmd_kind_status(kind));
}

void cmd_catch_faults(void)
{
	struct sigaction sa;

	if (getcwd(start_dir, sizeof start_dir))
		start_dir_len = strlen(start_dir);
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_bus;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGBUS, &sa, NULL);
}

void cmd_fault_ring(const char *name)
{
	__atomic_store_n(&ring_set, 0, __ATOMIC_RELEASE);
	if (!name || strlen(name) >= sizeof ring_name)
		return;
	strcpy(ring_name, name);
	strcpy(ring_path, RING_DIR);
	strcat(ring_path, name);
	__atomic_store_n(&ring_set, 1, __ATOMIC_RELEASE);
}
