/* san_prefault.c - linked into the sanitizer build alone (Makefile,
 * SAN_OBJ): maps the zero page under the program's untouched globals at
 * start, in one call instead of a page fault each.
 *
 * At exit LeakSanitizer reads every module's globals, most of them the
 * sanitizer runtime's own tables (4.4 MB of stack depot), never touched:
 * on a small VM each untouched page is a fault of ~10 us, and a sanitized
 * chute --version took 2,320 faults, 1,235 of them these.  With this:
 * 1,085 faults and ~10 ms less CPU, in every one of the sanitizer pass's
 * thousands of starts.  The pages stay zero and the checks are the same;
 * a kernel without MADV_POPULATE_READ (before 5.14) refuses it, and
 * nothing changes. */
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

/* The first module is the program itself: its writable segments. */
static int prefault_program(struct dl_phdr_info *info, size_t size, void *arg)
{
	const uintptr_t page = 4096;
	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		uintptr_t begin = info->dlpi_addr + ph->p_vaddr;
		uintptr_t end = begin + ph->p_memsz;
		begin &= ~(page - 1);
		end = (end + page - 1) & ~(page - 1);
		/* best effort: a refusal leaves the faults to come later */
		(void)madvise((void *)begin, end - begin, MADV_POPULATE_READ);
	}
	return 1; /* the program only: the libraries' globals are small */
}

__attribute__((constructor)) static void san_prefault(void)
{
	dl_iterate_phdr(prefault_program, NULL);
}
