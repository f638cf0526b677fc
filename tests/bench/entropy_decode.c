/* entropy_decode.c - chute's JPEG entropy decoder (lib/image/jpeg_huff.c)
 * against libjpeg-turbo's own, for scripts/bench-transform.sh: the same
 * JPEGs decoded by ch_image_decode with one and then the other, on one
 * thread, the two taking turns ROUNDS times so that load from elsewhere
 * falls on both alike.
 *
 *	entropy_decode [-r ROUNDS] LIST
 *
 * LIST names one JPEG a line, read into memory first (untimed).  Two
 * ways: whole (every image decoded to RGB), and entropy (only each
 * image's last row asked for: every row above it is entropy-decoded and
 * skipped, so that this is nearly all entropy decoding).  Prints one
 * line per way: WAY IMAGES CHUTE_SECONDS LIBJPEG_SECONDS (thread CPU
 * time, summed over the rounds).  Exit status 0, 1 if an image does not
 * decode or the two decoders' pixels differ, 2 on a usage or I/O error.
 *
 * Built by the benchmark against build/libchute.a. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "image/image.h"
#include "image/testing.h"

struct jpeg {
	uint8_t *data;
	size_t size;
	uint32_t w, h;
};

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int load(const char *path, struct jpeg *j)
{
	FILE *f = fopen(path, "rb");
	long size;

	if (!f || fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) <= 0 ||
	    fseek(f, 0, SEEK_SET) < 0) {
		if (f)
			fclose(f);
		return -1;
	}
	j->size = (size_t)size;
	j->data = malloc(j->size);
	if (!j->data || fread(j->data, 1, j->size, f) != j->size) {
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

/* Decodes every image (whole, or its last row) with one decoder; the
 * sum of the pixels' bytes goes to *sum, to compare the two. */
static double pass(struct ch_image_decoder *d, const struct jpeg *js,
		   size_t n, int last_row, int libjpeg, uint64_t *sum)
{
	double t0 = cpu_now();

	ch_image_decoder_set_entropy(d, libjpeg ? CH_ENTROPY_LIBJPEG
					       : CH_ENTROPY_CHUTE);
	*sum = 0;
	for (size_t i = 0; i < n; i++) {
		struct ch_decode_req req = {3, 0, last_row ? js[i].h - 1 : 0,
					    js[i].w, last_row ? 1 : js[i].h, 1};
		struct ch_decoded out;
		struct ch_error err;

		if (ch_image_decode(d, js[i].data, js[i].size, &req, &out,
				    &err) < 0) {
			fprintf(stderr, "entropy_decode: image %zu: %s\n", i,
				err.msg);
			exit(1);
		}
		for (uint32_t y = 0; y < out.img.h; y++)
			for (size_t x = 0; x < (size_t)out.img.w * 3; x += 61)
				*sum += out.img.px[y * out.img.stride + x];
	}
	return cpu_now() - t0;
}

int main(int argc, char **argv)
{
	int rounds = 3, opt;
	struct ch_image_decoder *d = ch_image_decoder_new();
	struct jpeg *js = NULL;
	size_t n = 0, cap = 0;
	char line[4096];
	FILE *list;

	while ((opt = getopt(argc, argv, "r:")) != -1)
		if (opt != 'r' || (rounds = atoi(optarg)) < 1)
			return 2;
	if (optind != argc - 1 || !d || !(list = fopen(argv[optind], "r"))) {
		fprintf(stderr, "usage: entropy_decode [-r ROUNDS] LIST\n");
		return 2;
	}
	while (fgets(line, sizeof(line), list)) {
		struct ch_image_info info;
		struct ch_error err;

		line[strcspn(line, "\n")] = '\0';
		if (n == cap) {
			struct jpeg *more = realloc(js, (2 * cap + 64) *
							    sizeof(*js));

			if (!more)
				return 2;
			js = more;
			cap = 2 * cap + 64;
		}
		if (load(line, &js[n]) < 0) {
			fprintf(stderr, "entropy_decode: cannot read %s\n", line);
			return 2;
		}
		if (ch_image_probe(d, js[n].data, js[n].size, &info, &err) < 0) {
			fprintf(stderr, "entropy_decode: %s: %s\n", line, err.msg);
			return 1;
		}
		js[n].w = info.w;
		js[n].h = info.h;
		n++;
	}
	fclose(list);
	for (int last_row = 0; last_row < 2; last_row++) {
		double t[2] = {0, 0};
		uint64_t sum[2] = {0, 0};

		for (int r = 0; r < rounds; r++)
			for (int lib = 0; lib < 2; lib++)
				t[lib] += pass(d, js, n, last_row, lib, &sum[lib]);
		if (sum[0] != sum[1]) {
			fprintf(stderr, "entropy_decode: the decoders differ\n");
			return 1;
		}
		printf("%s %zu %.6f %.6f\n", last_row ? "entropy" : "whole", n,
		       t[0], t[1]);
	}
	for (size_t i = 0; i < n; i++)
		free(js[i].data);
	free(js);
	ch_image_decoder_free(d);
	return 0;
}
