/*
 * out.c - signals, raw writes and JSON output shared by the subcommands.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute/common.h"
#include "cmd.h"

/* ------------------------------------------------------------------ */
/* Signals                                                              */

static volatile sig_atomic_t caught;

static void on_signal(int sig)
{
	caught = sig;
}

/* A signal ignored on entry (a background job of a script, nohup) stays
 * ignored, as the shell that started us meant. */
static void catch_unless_ignored(int sig, const struct sigaction *sa)
{
	struct sigaction old;

	if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
		return;
	sigaction(sig, sa, NULL);
}

volatile sig_atomic_t *cmd_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocking read (a list on stdin) must return so
	 * that the flag gets looked at.  SA_RESETHAND: if the first signal
	 * is not enough, the second one ends the process the usual way. */
	sa.sa_flags = SA_RESETHAND;
	catch_unless_ignored(SIGINT, &sa);
	catch_unless_ignored(SIGTERM, &sa);
	return &caught;
}

/* The map from a failure's kind to the exit status: chute(1), EXIT
 * STATUS.  fault.c's SIGBUS handler reads it too. */
static const int kind_status[] = {
	[CH_ERR_IO] = EXIT_USAGE,
	[CH_ERR_USAGE] = EXIT_USAGE,
	[CH_ERR_DATA] = EXIT_CHECK,
	[CH_ERR_MEMORY] = EXIT_USAGE,
	[CH_ERR_INTERRUPTED] = EXIT_USAGE, /* a flag no signal of ours set */
};
#define NKINDS (sizeof kind_status / sizeof kind_status[0])

int cmd_kind_status(enum ch_error_kind kind)
{
	/* a kind past the table (a struct never filled) is no data check */
	return kind_status[(size_t)kind < NKINDS ? kind : CH_ERR_IO];
}

int cmd_exit_status(const struct ch_error *err)
{
	if (caught)
		return 128 + caught;
	return cmd_kind_status(err->kind);
}

/* "chute CMD: MESSAGE" on stderr, through ch_url_redact and ch_escape:
 * no URL password and no raw control byte reaches the terminal. */
static void print_error(const char *msg)
{
	char *shown = ch_url_redact(msg);

	cmd_progress_clear(); /* the message starts on a line of its own */
	fflush(stdout);
	if (cmd_name())
		fprintf(stderr, "chute %s: ", cmd_name());
	else
		fputs("chute: ", stderr);
	cmd_put(stderr, shown ? shown : "out of memory");
	fputc('\n', stderr);
	free(shown);
}

int cmd_fail(struct ch_error *err)
{
	cmd_name_settings(err);
	if (err->msg[0])
		print_error(err->msg);
	return cmd_exit_status(err);
}

int cmd_parse_args(const struct cmd_spec *spec, int argc, char **argv,
		   void *args)
{
	struct ch_error err = {0};

	switch (cmd_parse(spec, argc, argv, args, &err)) {
	case CMD_GO:
		return 0;
	case CMD_HELP:
		return -1;
	default:
		return cmd_fail(&err);
	}
}

int cmd_prefix_error(struct ch_error *err, const char *fmt, ...)
{
	char prefix[sizeof err->msg], msg[sizeof err->msg];
	va_list ap;

	memcpy(msg, err->msg, sizeof msg);
	msg[sizeof msg - 1] = '\0';
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	/* cut short when too long, as ch_error_set cuts */
	if (snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, msg) < 0)
		err->msg[0] = '\0';
	return -1;
}

int cmd_reported(struct ch_error *err, enum ch_error_kind kind)
{
	err->msg[0] = '\0';
	err->kind = kind;
	err->setting = err->remedy = NULL;
	return -1;
}

int cmd_fail_reported(enum ch_error_kind kind)
{
	struct ch_error err;

	cmd_reported(&err, kind);
	return cmd_fail(&err);
}

int cmd_parsed_status(int parsed)
{
	if (parsed < 0)
		return 0; /* --help */
	return cmd_fail_reported(CH_ERR_USAGE);
}

/* ------------------------------------------------------------------ */
/* Raw output                                                           */

int cmd_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int cmd_is_text(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t cp;
	for (size_t i = 0, n; i < len; i += n) {
		if (!(n = ch_utf8_len(p + i, len - i, &cp)))
			return 0;
		/* a control character may be a terminal's escape */
		if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') ||
		    (cp >= 0x7f && cp < 0xa0))
			return 0;
	}
	return 1;
}

int cmd_binary_to_terminal(int force, const char *what, const char *how,
			   struct ch_error *err)
{
	if (force || !isatty(STDOUT_FILENO))
		return 0;
	return ch_error_usage(err, "not writing %s to a terminal; %s (--force "
			      "writes anyway)", what, how);
}

/* ------------------------------------------------------------------ */
/* JSON                                                                 */

json_t *cmd_json_bytes(const char *s, size_t len)
{
	const unsigned char *in = (const unsigned char *)s;
	json_t *str = json_stringn(s, len);
	char *copy;
	size_t o = 0;

	if (str || len > SIZE_MAX / 3 - 1)
		return str;
	/* File names need not be UTF-8; JSON strings must be. */
	copy = malloc(len * 3 + 1);
	if (!copy)
		return NULL;
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = ch_utf8_len(in + i, len - i, &cp);
		if (n == 0) {
			memcpy(copy + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(copy + o, in + i, n);
		o += n;
		i += n;
	}
	str = json_stringn(copy, o);
	free(copy);
	return str;
}

int cmd_json_print(json_t *doc, FILE *out)
{
	if (json_dumpf(doc, out, JSON_COMPACT) < 0)
		return -1;
	return fputc('\n', out) == EOF ? -1 : 0;
}

json_t *cmd_json_id(const char *id)
{
	return id && id[0] ? json_string(id) : json_null();
}

json_t *cmd_json_count(uint64_t n)
{
	return json_integer((json_int_t)n);
}

json_t *cmd_json_text(const char *s)
{
	return cmd_json_bytes(s, strlen(s));
}

json_t *cmd_json_seconds(double seconds)
{
	/* milliseconds: "0.042", not 17 digits of timer noise */
	return json_real(seconds > 0 ? round(seconds * 1000) / 1000 : 0.0);
}

json_t *cmd_json_tags(const char *const *tags, size_t n, int latest)
{
	json_t *a = json_array();

	if (latest)
		json_array_append_new(a, json_string("latest"));
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, cmd_json_text(tags[i]));
	return a;
}

json_t *cmd_json_version(const char *id, const char *parent)
{
	json_t *doc = json_object();

	json_object_set_new(doc, "id", cmd_json_id(id));
	json_object_set_new(doc, "parent", cmd_json_id(parent));
	return doc;
}

void cmd_json_emit(json_t *doc)
{
	/* 15 significant digits: seconds rounded to 0.087 print as such.  A
	 * failed write shows in stdout's error flag, which main reports. */
	if (json_dumpf(doc, stdout, JSON_COMPACT | JSON_REAL_PRECISION(15)) == 0)
		putchar('\n');
	json_decref(doc);
}

/* ------------------------------------------------------------------ */
/* A dataset replaced                                                   */

void cmd_json_add_replaced(json_t *doc, const char *old_id, const char *id,
			   const char *changes)
{
	json_object_set_new(doc, "replaced", cmd_json_id(old_id));
	json_object_set_new(doc, "unchanged",
			    json_boolean(old_id[0] && strcmp(old_id, id) == 0));
	json_object_set_new(doc, "changes", old_id[0] ? cmd_json_text(changes)
						      : json_null());
}

void cmd_print_replaced(const char *dir, const char *old_id, const char *id,
			const char *changes)
{
	if (old_id[0] && strcmp(old_id, id) == 0)
		printf("%s: unchanged\n", dir);
	else if (old_id[0])
		printf("replaced %s: %.12s -> %.12s (%s)\n", dir, old_id, id,
		       changes);
}
