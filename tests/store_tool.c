/* store_tool.c - drives include/chute/store.h from the shell, for
 * tests/cli/store.bats.  Not installed.
 *
 *   store_tool [--retries N] [--backoff-ms MS] [--stall-s S] URL CMD ARGS...
 *     stat KEY                       "exists SIZE" or "missing"
 *     get KEY                        the object on stdout
 *     range KEY OFF LEN              LEN bytes at OFF on stdout
 *     put KEY FILE                   FILE, or stdin when FILE is "-"
 *     getmany JOBS KEY=PATH:SIZE:HASH...   "KEY ok [resumed]" per job
 *     putmany JOBS KEY=PATH...       "KEY SIZE" per job
 *     statmany JOBS KEY...           "KEY exists SIZE" or "KEY missing"
 *     list [PREFIX]                  "KEY SIZE MTIME" per object, sorted
 *     delete KEY...                  removes each KEY
 *
 * The *many commands print the last progress report on stderr as
 * "progress: FILES/TOTAL files, BYTES/TOTAL bytes".  Errors are printed
 * as "store_tool: MESSAGE" and exit 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute/store.h"
#include "store/testing.h"

struct seen {
	struct ch_progress last;
	int calls;
};

static void on_progress(const struct ch_progress *p, void *arg)
{
	struct seen *s = arg;
	s->last = *p;
	s->calls++;
}

static int die(const char *msg)
{
	fprintf(stderr, "store_tool: %s\n", msg);
	return 1;
}

static int usage(void)
{
	return die("usage: store_tool [--retries N] [--backoff-ms MS] "
		   "[--stall-s S] URL stat|get|range|put|getmany|putmany|"
		   "statmany|list|delete ARGS...");
}

static int write_out(const void *p, size_t n)
{
	return fwrite(p, 1, n, stdout) == n && fflush(stdout) == 0 ? 0 : -1;
}

static int read_stdin(struct ch_buf *b, struct ch_error *err)
{
	for (;;) {
		if (ch_buf_reserve(b, b->len + 65536, err) < 0)
			return -1;
		size_t n = fread(b->data + b->len, 1, 65536, stdin);
		b->len += n;
		if (n == 0)
			return ferror(stdin) ? ch_error_set(err, "cannot read "
							       "stdin")
					     : 0;
	}
}

/* KEY=PATH[:SIZE:HASH] */
static int parse_job(char *arg, struct ch_store_job *job, int full,
		     struct ch_error *err)
{
	char *eq = strchr(arg, '=');
	if (!eq)
		return ch_error_set(err, "'%s' is not KEY=PATH", arg);
	*eq = '\0';
	job->key = arg;
	job->path = eq + 1;
	if (!full)
		return 0;
	char *hash = strrchr(eq + 1, ':');
	if (!hash)
		return ch_error_set(err, "'%s' is not KEY=PATH:SIZE:HASH", arg);
	*hash++ = '\0';
	char *size = strrchr(eq + 1, ':');
	if (!size || ch_hash128_parse(hash, &job->hash) < 0)
		return ch_error_set(err, "'%s' is not KEY=PATH:SIZE:HASH", arg);
	*size++ = '\0';
	job->size = strtoull(size, NULL, 10);
	return 0;
}

static int many(struct ch_store *st, const char *cmd, int argc, char **argv,
		struct ch_error *err)
{
	if (argc < 1)
		return ch_error_set(err, "%s needs JOBS", cmd);
	size_t n = (size_t)argc - 1;
	struct ch_store_job *jobs = calloc(n ? n : 1, sizeof(*jobs));
	struct seen seen = { 0 };
	struct ch_transfer_opts o = { atoi(argv[0]), on_progress, &seen };
	int rc = -1;
	if (!jobs)
		return ch_error_set(err, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(cmd, "statmany"))
			jobs[i].key = argv[i + 1];
		else if (parse_job(argv[i + 1], &jobs[i],
				   !strcmp(cmd, "getmany"), err) < 0)
			goto out;
	}
	if (!strcmp(cmd, "getmany"))
		rc = ch_store_get_many(st, jobs, n, &o, err);
	else if (!strcmp(cmd, "putmany"))
		rc = ch_store_put_many(st, jobs, n, &o, err);
	else
		rc = ch_store_stat_many(st, jobs, n, &o, err);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct ch_store_job *j = &jobs[i];
		if (!strcmp(cmd, "getmany"))
			printf("%s ok%s\n", j->key, j->resumed ? " resumed" : "");
		else if (!strcmp(cmd, "putmany"))
			printf("%s %llu\n", j->key, (unsigned long long)j->size);
		else if (j->exists)
			printf("%s exists %llu\n", j->key,
			       (unsigned long long)j->remote_size);
		else
			printf("%s missing\n", j->key);
	}
	fprintf(stderr, "progress: %llu/%llu files, %llu/%llu bytes\n",
		(unsigned long long)seen.last.done,
		(unsigned long long)seen.last.total,
		(unsigned long long)seen.last.bytes,
		(unsigned long long)seen.last.total_bytes);
out:
	free(jobs);
	return rc;
}

static int list(struct ch_store *st, const char *prefix,
		struct ch_error *err)
{
	struct ch_store_list l;
	if (ch_store_list(st, prefix, &l, err) < 0)
		return -1;
	for (size_t k = 0; k < l.n; k++)
		printf("%s %llu %lld\n", l.objects[k].key,
		       (unsigned long long)l.objects[k].size,
		       (long long)l.objects[k].mtime);
	ch_store_list_release(&l);
	return 0;
}

static int run(struct ch_store *st, const char *cmd, int argc, char **argv,
	       struct ch_error *err)
{
	struct ch_buf b = { 0 };
	uint64_t size = 0;
	int rc = -1;
	if (!strcmp(cmd, "stat") && argc == 1) {
		rc = ch_store_stat(st, argv[0], &size, err);
		if (rc == 1)
			printf("exists %llu\n", (unsigned long long)size);
		else if (rc == 0)
			printf("missing\n");
		rc = rc < 0 ? -1 : 0;
	} else if (!strcmp(cmd, "get") && argc == 1) {
		rc = ch_store_get(st, argv[0], (size_t)1 << 32, &b, err);
		if (rc == 0 && write_out(b.data, b.len) < 0)
			rc = ch_error_set(err, "cannot write stdout");
	} else if (!strcmp(cmd, "range") && argc == 3) {
		size_t len = strtoull(argv[2], NULL, 10);
		rc = ch_buf_reserve(&b, len ? len : 1, err);
		if (rc == 0)
			rc = ch_store_get_range(st, argv[0],
						strtoull(argv[1], NULL, 10), len,
						b.data, err);
		if (rc == 0 && write_out(b.data, len) < 0)
			rc = ch_error_set(err, "cannot write stdout");
	} else if (!strcmp(cmd, "put") && argc == 2 && !strcmp(argv[1], "-")) {
		rc = read_stdin(&b, err);
		if (rc == 0)
			rc = ch_store_put(st, argv[0], b.data, b.len, err);
	} else if (!strcmp(cmd, "put") && argc == 2) {
		rc = ch_store_put_file(st, argv[0], argv[1], err);
	} else if (!strcmp(cmd, "list") && argc <= 1) {
		rc = list(st, argc ? argv[0] : "", err);
	} else if (!strcmp(cmd, "delete")) {
		rc = 0;
		for (int k = 0; k < argc && rc == 0; k++)
			rc = ch_store_delete(st, argv[k], err);
	} else if (!strcmp(cmd, "getmany") || !strcmp(cmd, "putmany") ||
		   !strcmp(cmd, "statmany")) {
		rc = many(st, cmd, argc, argv, err);
	} else {
		rc = ch_error_set(err, "unknown command or wrong arguments: %s",
				  cmd);
	}
	ch_buf_release(&b);
	return rc == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct ch_store_opts opts = { 0 };
	int i = 1;
	for (; i + 1 < argc && !strncmp(argv[i], "--", 2); i += 2) {
		if (!strcmp(argv[i], "--retries"))
			opts.retries = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--backoff-ms"))
			opts.backoff_ms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--stall-s"))
			opts.stall_timeout_s = atoi(argv[i + 1]);
		else
			return usage();
	}
	if (argc - i < 2)
		return usage();
	struct ch_error err;
	struct ch_store *st;
	if (ch_store_open(&st, argv[i], &opts, &err) < 0)
		return die(err.msg);
	int rc = run(st, argv[i + 1], argc - i - 2, argv + i + 2, &err);
	ch_store_close(st);
	return rc < 0 ? die(err.msg) : 0;
}
