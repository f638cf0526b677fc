/* entropy_decode.c - chute's JPEG entropy decoder (lib/image/jpeg_huff.c)
 * against libjpeg-turbo's own, for scripts/bench-transform.sh: the same
 * JPEGs decoded by ch_image_decode with one and then the other, on one
 * thread, the two taking turns ROUNDS times so that load from elsewhere
 * falls on both alike.
 *
 *	entropy_decode [-r ROUNDS] LIST
 *
 * LIST names one JPEG a line, read into memory first (untimed).  Three
 * ways: whole (every image decoded to RGB), entropy (only each image's
 * last row asked for: every row above it is entropy-decoded and
 * skipped, so that this is nearly all entropy decoding), and crop (a
 * region as random-resized-crop picks one, the same ones each run: the
 * rows above it and the columns beside it are entropy-decoded only).
 * Prints one line per way: WAY IMAGES CHUTE_SECONDS LIBJPEG_SECONDS
 * (thread CPU time, summed over the rounds).  Exit status 0, 1 if an image does not
 * decode or the two decoders' pixels differ, 2 on a usage or I/O error.
 *
 * Built by the benchmark against build/libchute.a. */
#include <math.h>
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

enum way { WHOLE, LAST_ROW, CROP };
static const char *const way_names[] = {"whole", "entropy", "crop"};

/* A region as torchvision's RandomResizedCrop picks one (scale 0.08-1,
 * ratio 3/4-4/3, ten tries, else the whole image), from a generator
 * seeded by the image's index. */
static struct ch_decode_req crop_of(const struct jpeg *j, size_t i)
{
	uint64_t s = i * 0x9e3779b97f4a7c15u + 1;
	double area = (double)j->w * j->h;

	for (int t = 0; t < 10; t++) {
		double u[3];

		for (int k = 0; k < 3; k++) {
			s = s * 6364136223846793005u + 1442695040888963407u;
			u[k] = (double)(s >> 11) / 9007199254740992.0;
		}
		double a = area * (0.08 + 0.92 * u[0]);
		double r = exp(log(3.0 / 4) + u[1] * log(16.0 / 9));
		uint32_t w = (uint32_t)(sqrt(a * r) + 0.5);
		uint32_t h = (uint32_t)(sqrt(a / r) + 0.5);

		if (w >= 1 && h >= 1 && w <= j->w && h <= j->h) {
			uint32_t x = (uint32_t)(u[2] * (j->w - w + 1));
			uint32_t y = (uint32_t)((s >> 40) % (j->h - h + 1));

			return (struct ch_decode_req){3, x, y, w, h, 1};
		}
	}
	return (struct ch_decode_req){3, 0, 0, j->w, j->h, 1};
}

static struct ch_decode_req req_of(const struct jpeg *j, size_t i,
				   enum way way)
{
	switch (way) {
	case LAST_ROW:
		return (struct ch_decode_req){3, 0, j->h - 1, j->w, 1, 1};
	case CROP:
		return crop_of(j, i);
	default:
		return (struct ch_decode_req){3, 0, 0, j->w, j->h, 1};
	}
}

/* Decodes every image (whole, its last row or a crop) with one decoder;
 * the sum of the pixels' bytes goes to *sum, to compare the two. */
static double pass(struct ch_image_decoder *d, const struct jpeg *js,
		   size_t n, enum way way, int libjpeg, uint64_t *sum)
{
	double t0 = cpu_now();

	ch_image_decoder_set_entropy(d, libjpeg ? CH_ENTROPY_LIBJPEG
					       : CH_ENTROPY_CHUTE);
	*sum = 0;
	for (size_t i = 0; i < n; i++) {
		struct ch_decode_req req = req_of(&js[i], i, way);
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
	for (enum way way = WHOLE; way <= CROP; way++) {
		double t[2] = {0, 0};
		uint64_t sum[2] = {0, 0};

		for (int r = 0; r < rounds; r++)
			for (int lib = 0; lib < 2; lib++)
				t[lib] += pass(d, js, n, way, lib, &sum[lib]);
		if (sum[0] != sum[1]) {
			fprintf(stderr, "entropy_decode: the decoders differ\n");
			return 1;
		}
		printf("%s %zu %.6f %.6f\n", way_names[way], n, t[0], t[1]);
	}
	for (size_t i = 0; i < n; i++)
		free(js[i].data);
	free(js);
	ch_image_decoder_free(d);
	return 0;
}
