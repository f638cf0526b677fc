/*
 * test_error.c - the kind of a struct ch_error (chute/common.h): what each
 * setter gives, that it travels with the struct, and what opening a
 * corrupt lone shard says.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute.h"
#include "shard/format.h"
#include "unit.h"

/* A setter returns -1 and fills both the message and the kind. */
static int gives(int rc, const struct ch_error *err, enum ch_error_kind kind,
		 const char *msg)
{
	unit_note("kind %d, message '%s'", (int)err->kind, err->msg);
	return CHECK(rc == -1) & CHECK_EQ_U64(err->kind, kind) &
	       CHECK_STR(err->msg, msg);
}

static void setters_give_their_kind(void)
{
	struct ch_error err = { .kind = CH_ERR_DATA };

	gives(ch_error_set(&err, "cannot open '%s'", "x"), &err, CH_ERR_IO,
	      "cannot open 'x'");
	gives(ch_error_data(&err, "bad magic at %d", 0), &err, CH_ERR_DATA,
	      "bad magic at 0");
	gives(ch_error_usage(&err, "--val %g", 2.0), &err, CH_ERR_USAGE,
	      "--val 2");
	gives(ch_error_interrupted(&err), &err, CH_ERR_INTERRUPTED,
	      "interrupted");
	gives(ch_error_nomem(&err), &err, CH_ERR_MEMORY, "out of memory");
	/* the last setter decides: a data error overwritten is not one */
	ch_error_data(&err, "corrupt");
	gives(ch_error_set(&err, "cannot write"), &err, CH_ERR_IO,
	      "cannot write");
}

/* The setting a failure concerns travels with it; the next setter, which
 * may be about anything, clears it. */
static void setting_and_remedy_are_named_and_cleared(void)
{
	struct ch_error err = { 0 };

	ch_error_usage(&err, "seed %d: at most 2^63-1", 2);
	CHECK(ch_error_setting(&err, "seed") == -1);
	CHECK(ch_error_remedy(&err, "force") == -1);
	struct ch_error copy = err; /* passed up through a layer */
	CHECK_STR(copy.setting, "seed");
	CHECK_STR(copy.remedy, "force");
	CHECK_STR(copy.msg, "seed 2: at most 2^63-1");
	ch_error_set(&err, "cannot write");
	CHECK(!err.setting && !err.remedy);
	ch_error_setting(&err, "seed");
	ch_error_nomem(&err);
	CHECK(!err.setting && !err.remedy);
	ch_error_setting(&err, "seed");
	ch_error_interrupted(&err);
	CHECK(!err.setting);
	CHECK(ch_error_setting(NULL, "seed") == -1);
}

static void errno_gives_io_or_memory(void)
{
	struct ch_error err = { .kind = CH_ERR_DATA };
	char want[256];

	snprintf(want, sizeof want, "cannot read 'f': %s", strerror(ENOENT));
	gives(ch_error_errno(&err, ENOENT, "cannot read '%s'", "f"), &err,
	      CH_ERR_IO, want);
	snprintf(want, sizeof want, "cannot map: %s", strerror(ENOMEM));
	gives(ch_error_errno(&err, ENOMEM, "cannot map"), &err,
	      CH_ERR_MEMORY, want);
}

/* Callers that do not want the error pass NULL. */
static void null_error_is_fine(void)
{
	CHECK(ch_error_set(NULL, "x") == -1);
	CHECK(ch_error_data(NULL, "x") == -1);
	CHECK(ch_error_usage(NULL, "x") == -1);
	CHECK(ch_error_errno(NULL, EIO, "x") == -1);
	CHECK(ch_error_interrupted(NULL) == -1);
	CHECK(ch_error_nomem(NULL) == -1);
}

/* How workers hand their error to the consumer: a plain copy. */
static void kind_survives_a_copy(void)
{
	struct ch_error worker, consumer = { .kind = CH_ERR_IO };

	ch_error_data(&worker, "checksum mismatch in block %u", 3u);
	consumer = worker;
	gives(-1, &consumer, CH_ERR_DATA, "checksum mismatch in block 3");
	ch_error_interrupted(&worker);
	memcpy(&consumer, &worker, sizeof consumer);
	gives(-1, &consumer, CH_ERR_INTERRUPTED, "interrupted");
}

/* A file that starts like a shard but is cut short: the data's fault for
 * whoever takes lone shards, the caller's for what needs a folder (which
 * says so rather than what is wrong with the shard). */
static void corrupt_lone_shard(void)
{
	char path[] = "/tmp/chute-test-error-XXXXXX";
	int fd = mkstemp(path);
	struct ch_dataset ds;
	struct ch_error err = { .kind = CH_ERR_IO };

	if (!CHECK(fd >= 0))
		return;
	CHECK(write(fd, CHS_MAGIC, 8) == 8);
	close(fd);
	CHECK(ch_dataset_open(&ds, path, &err) == -1);
	unit_note("ch_dataset_open: %s", err.msg);
	CHECK_EQ_U64(err.kind, CH_ERR_DATA);
	CHECK(strstr(err.msg, "not a chute shard") != NULL);
	CHECK(ch_dataset_open_folder(&ds, path, &err) == -1);
	unit_note("ch_dataset_open_folder: %s", err.msg);
	CHECK_EQ_U64(err.kind, CH_ERR_USAGE);
	CHECK(strstr(err.msg, "is a shard, not a dataset folder") != NULL);
	unlink(path);
}

/* A file named *.chs is a shard whatever its bytes: a damaged magic is the
 * data's fault, not a manifest that is not JSON. */
static void lone_chs_with_a_bad_magic(void)
{
	char path[] = "/tmp/chute-test-error-XXXXXX.chs";
	int fd = mkstemps(path, 4);
	struct ch_dataset ds;
	struct ch_error err = { .kind = CH_ERR_IO };
	char text[256];

	if (!CHECK(fd >= 0))
		return;
	memset(text, ' ', sizeof text); /* longer than the smallest shard */
	memcpy(text, "{\"not\": \"a shard\"}", 18);
	CHECK(write(fd, text, sizeof text) == (ssize_t)sizeof text);
	close(fd);
	CHECK(ch_dataset_is_lone_shard(path));
	CHECK(ch_dataset_open(&ds, path, &err) == -1);
	unit_note("ch_dataset_open: %s", err.msg);
	CHECK_EQ_U64(err.kind, CH_ERR_DATA);
	CHECK(strstr(err.msg, "bad magic") != NULL);
	unlink(path);
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(setters_give_their_kind),
		UNIT(setting_and_remedy_are_named_and_cleared),
		UNIT(errno_gives_io_or_memory),
		UNIT(null_error_is_fine),
		UNIT(kind_survives_a_copy),
		UNIT(corrupt_lone_shard),
		UNIT(lone_chs_with_a_bad_magic),
	};
	return unit_run(tests, UNIT_COUNT(tests));
}
