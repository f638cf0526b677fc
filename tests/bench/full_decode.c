/* full_decode.c - the plain baseline of scripts/bench-transform.sh: every
 * JPEG decoded whole, to RGB, by TurboJPEG, as fast as THREADS threads
 * can.  What a loader that decodes first and crops afterwards pays.
 *
 *	full_decode [-t THREADS] LIST
 *
 * LIST names one JPEG a line.  The files are read into memory first
 * (untimed); the threads then take images in turn from a shared counter,
 * each with its own decompressor and output buffer, and decode with
 * TurboJPEG's defaults (accurate integer DCT, fancy upsampling).  Prints
 * one line: IMAGES SECONDS MEGAPIXELS.  Exit status 0, 1 if an image does
 * not decode, 2 on a usage or I/O error.
 *
 * Built by the benchmark: cc -O2 full_decode.c -lturbojpeg -lpthread */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>

#define MAX_THREADS 64

struct jpeg {
	unsigned char *data;
	unsigned long size;
};

struct job {
	const struct jpeg *jpegs;
	size_t n;
	atomic_size_t next;
	atomic_int failed;
};

struct worker {
	pthread_t tid;
	struct job *job;
	uint64_t pixels;
};

static int read_file(const char *path, struct jpeg *j)
{
	FILE *f = fopen(path, "rb");
	int rc = -1;
	if (!f)
		goto fail;
	if (fseek(f, 0, SEEK_END) < 0)
		goto fail;
	long size = ftell(f);
	if (size <= 0 || fseek(f, 0, SEEK_SET) < 0)
		goto fail;
	j->data = malloc((size_t)size);
	j->size = (unsigned long)size;
	if (!j->data || fread(j->data, 1, (size_t)size, f) != (size_t)size)
		goto fail;
	rc = 0;
fail:
	if (rc < 0)
		fprintf(stderr, "full_decode: cannot read '%s': %s\n", path,
			errno ? strerror(errno) : "empty or short");
	if (f)
		fclose(f);
	return rc;
}

/* Reads every file LIST names; returns the count, -1 on error. */
static ssize_t load_list(const char *list, struct jpeg **out)
{
	FILE *f = fopen(list, "r");
	struct jpeg *v = NULL;
	size_t n = 0, cap = 0, len = 0;
	char *line = NULL;
	ssize_t got, rc = -1;
	if (!f) {
		fprintf(stderr, "full_decode: cannot open '%s': %s\n", list,
			strerror(errno));
		return -1;
	}
	while ((got = getline(&line, &len, f)) > 0) {
		if (line[got - 1] == '\n')
			line[--got] = '\0';
		if (!got)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			struct jpeg *nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				goto out;
			v = nv;
		}
		v[n].data = NULL;
		if (read_file(line, &v[n]) < 0) {
			free(v[n].data);
			goto out;
		}
		n++;
	}
	rc = (ssize_t)n;
	*out = v;
	v = NULL;
out:
	for (size_t i = 0; v && i < n; i++)
		free(v[i].data);
	free(v);
	free(line);
	fclose(f);
	return rc;
}

/* Decodes one JPEG into *buf (grown as needed); returns its pixels, 0 on
 * error. */
static uint64_t decode_one(tjhandle tj, const struct jpeg *j,
			   unsigned char **buf, size_t *cap)
{
	int w, h, sub, cs;
	if (tjDecompressHeader3(tj, j->data, j->size, &w, &h, &sub, &cs) < 0)
		return 0;
	size_t need = (size_t)w * (size_t)h * 3;
	if (need > *cap) {
		unsigned char *nb = realloc(*buf, need);
		if (!nb)
			return 0;
		*buf = nb;
		*cap = need;
	}
	if (tjDecompress2(tj, j->data, j->size, *buf, w, 0, h, TJPF_RGB, 0) < 0)
		return 0;
	return (uint64_t)w * (uint64_t)h;
}

static void *work(void *arg)
{
	struct worker *wk = arg;
	struct job *job = wk->job;
	tjhandle tj = tjInitDecompress();
	unsigned char *buf = NULL;
	size_t cap = 0, i;
	if (!tj) {
		atomic_store(&job->failed, 1);
		return NULL;
	}
	while ((i = atomic_fetch_add(&job->next, 1)) < job->n) {
		uint64_t px = decode_one(tj, &job->jpegs[i], &buf, &cap);
		if (!px) {
			fprintf(stderr, "full_decode: image %zu: %s\n", i,
				tjGetErrorStr2(tj));
			atomic_store(&job->failed, 1);
			break;
		}
		wk->pixels += px;
	}
	free(buf);
	tjDestroy(tj);
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs the threads over all images; returns 0, 1 if one failed. */
static int decode_all(struct job *job, int threads, double *secs,
		      uint64_t *pixels)
{
	struct worker wk[MAX_THREADS] = { { 0 } };
	int started = 0;
	double t0 = now();
	for (; started < threads; started++) {
		wk[started].job = job;
		if (pthread_create(&wk[started].tid, NULL, work,
				   &wk[started])) {
			fprintf(stderr, "full_decode: cannot start a thread\n");
			atomic_store(&job->failed, 1);
			atomic_store(&job->next, job->n);
			break;
		}
	}
	*pixels = 0;
	for (int t = 0; t < started; t++) {
		pthread_join(wk[t].tid, NULL);
		*pixels += wk[t].pixels;
	}
	*secs = now() - t0;
	return atomic_load(&job->failed) ? 1 : 0;
}

int main(int argc, char **argv)
{
	int threads = 2, argi = 1;
	if (argc == 4 && !strcmp(argv[1], "-t")) {
		threads = atoi(argv[2]);
		argi = 3;
	}
	if (argc != argi + 1 || threads < 1 || threads > MAX_THREADS) {
		fprintf(stderr, "usage: full_decode [-t THREADS] LIST\n");
		return 2;
	}
	struct jpeg *jpegs = NULL;
	ssize_t n = load_list(argv[argi], &jpegs);
	if (n < 0)
		return 2;
	struct job job = { .jpegs = jpegs, .n = (size_t)n };
	atomic_init(&job.next, 0);
	atomic_init(&job.failed, 0);
	double secs;
	uint64_t pixels;
	int rc = decode_all(&job, threads, &secs, &pixels);
	if (!rc)
		printf("%zd %.6f %.3f\n", n, secs, (double)pixels / 1e6);
	for (ssize_t i = 0; i < n; i++)
		free(jpegs[i].data);
	free(jpegs);
	return rc;
}
