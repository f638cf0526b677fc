/*
 * test_history.c - the stat cache's records and file, and what
 * ch_history_load says about ids it cannot serve (chute/version.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute.h"
#include "chute/version.h"
#include "unit.h"

static char dir[] = "/tmp/chute-test-history-XXXXXX";

static struct stat fake_stat(uint64_t size, uint64_t ino, int64_t ns)
{
	struct stat st;

	memset(&st, 0, sizeof st);
	st.st_size = (off_t)size;
	st.st_ino = (ino_t)ino;
	st.st_mtim.tv_sec = ns / 1000000000;
	st.st_mtim.tv_nsec = ns % 1000000000;
	return st;
}

static void write_text(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof path, "%s/.chute/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
}

/* Records stay sorted by path whatever the order of puts; a put of a
 * known path replaces it; drop removes it. */
static void records_sorted(void)
{
	struct ch_statcache c = { 0 };
	struct ch_error err;
	struct stat st = fake_stat(10, 7, 1500000000123456789);
	struct ch_hash128 h = { 1, 2 };
	const struct ch_stat_record *r;

	CHECK(ch_statcache_put(&c, "shards/b.chs", &st, h, &err) == 0);
	CHECK(ch_statcache_put(&c, "shards/c.chs", &st, h, &err) == 0);
	CHECK(ch_statcache_put(&c, "shards/a.chs", &st, h, &err) == 0);
	CHECK(ch_statcache_put(&c, "shards/b.chs", &st, (struct ch_hash128){3, 4},
			       &err) == 0);
	CHECK(ch_statcache_put(&c, "bad\nname", &st, h, &err) == 0);
	if (!CHECK_EQ_U64(c.n, 3))
		goto out;
	CHECK_STR(c.v[0].path, "shards/a.chs");
	CHECK_STR(c.v[2].path, "shards/c.chs");
	r = ch_statcache_find(&c, "shards/b.chs");
	CHECK(r && r->hash.high == 3 && r->hash.low == 4);
	CHECK(r && ch_statcache_matches(r, &st));
	st.st_mtim.tv_nsec++;
	CHECK(r && !ch_statcache_matches(r, &st));
	ch_statcache_drop(&c, "shards/b.chs");
	CHECK(ch_statcache_find(&c, "shards/b.chs") == NULL);
	CHECK_EQ_U64(c.n, 2);
out:
	ch_statcache_release(&c);
}

/* Save then load gives the same records; a path may hold spaces. */
static void save_load(void)
{
	struct ch_statcache c = { 0 }, back;
	struct ch_error err;
	struct stat st = fake_stat(4096, 12345, 1700000000000000001);
	struct ch_hash128 h = { 0x0123456789abcdefULL, 0xfedcba9876543210ULL };
	const struct ch_stat_record *r;

	CHECK(ch_statcache_put(&c, "shards/with space.chs", &st, h, &err) == 0);
	if (!CHECK(ch_statcache_save(dir, &c, &err) == 0)) {
		unit_note("%s", err.msg);
		goto out;
	}
	CHECK(ch_statcache_load(dir, &back, &err) == 0);
	r = ch_statcache_find(&back, "shards/with space.chs");
	CHECK(r && ch_statcache_matches(r, &st) &&
	      memcmp(&r->hash, &h, sizeof h) == 0);
	ch_statcache_release(&back);
out:
	ch_statcache_release(&c);
}

/* A cache that is not one (wrong header, a torn line, garbage) loads
 * as an empty cache: it only costs hashing. */
static void bad_cache_is_empty(void)
{
	static const char *const bad[] = {
		"not-a-cache\n",
		"chute-stat 1\n1 2 3 0123456789abcdef0123456789abcdef shards/x",
		"chute-stat 1\nx y z 0123456789abcdef0123456789abcdef a\n",
		"chute-stat 1\n1 2 3 nothex shards/x\n",
		"chute-stat 1\n1 2 3 0123456789abcdef0123456789abcdef \n",
	};
	struct ch_statcache c;
	struct ch_error err;

	for (size_t i = 0; i < UNIT_COUNT(bad); i++) {
		write_text("stat", bad[i]);
		CHECK(ch_statcache_load(dir, &c, &err) == 0);
		if (!CHECK_EQ_U64(c.n, 0))
			unit_note("case %zu", i);
		ch_statcache_release(&c);
	}
}

static void history_load_refusals(void)
{
	struct ch_manifest m;
	struct ch_error err;

	CHECK(ch_history_load(dir, "../../etc/passwd", &m, &err) == -1);
	CHECK(strstr(err.msg, "not a version id") != NULL);
	CHECK(ch_history_load(dir, "0123456789ABCDEF0123456789abcdef", &m,
			      &err) == -1);
	CHECK(ch_history_load(dir, "0123456789abcdef0123456789abcdef", &m,
			      &err) == 1);
	CHECK(strstr(err.msg, "not in the history") != NULL);
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(records_sorted),
		UNIT(save_load),
		UNIT(bad_cache_is_empty),
		UNIT(history_load_refusals),
	};
	char cmd[128];
	int rc;

	if (!mkdtemp(dir))
		return 2;
	snprintf(cmd, sizeof cmd, "mkdir -p %s/.chute", dir);
	if (system(cmd) != 0)
		return 2;
	rc = unit_run(tests, UNIT_COUNT(tests));
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 2;
	return rc;
}
