/*
 * shard/format.h - byte layout of a chute shard, version 1.1.
 * The normative description is man/chute-shard.5; keep the two in step.
 *
 * All integers little-endian, fixed width.  The file is contiguous: no
 * padding anywhere, so every byte is covered by exactly one checksum.
 *
 *   offset 0        header      64 bytes
 *   64              dictionary  dict_size bytes (absent if dict_size = 0)
 *   64 + dict_size  blocks      back to back, in block order
 *   index_offset    index       index_stored_size bytes
 *   file_size - 64  footer      64 bytes
 *
 * Header (64 bytes)
 *   0   magic  "\x89CHS\r\n\x1a\n"
 *   8   u16 major version (1)      10  u16 minor version (0)
 *   12  u32 flags (bit 0: dictionary present; other bits must be 0)
 *   16  u64 dict_size                 24  u64 dict_hash (XXH3-64)
 *   32..55 reserved, zero
 *   56  u64 XXH3-64 of bytes 0..55
 *
 * Footer (64 bytes)
 *   0   u64 index_offset            8   u64 index_stored_size
 *   16  u64 index_raw_size          24  u64 index_hash (XXH3-64 of the
 *                                       stored index bytes; of the page
 *                                       table alone for codec 2)
 *   32  u64 sample_count            40  u32 block_count
 *   44  u32 index_codec (0 raw, 1 zstd, 2 zstd pages: version 1.1)
 *   48  u64 XXH3-64 of footer bytes 0..47
 *   56  magic "CHSFOOT1"
 *
 * Index (after decoding; sections back to back)
 *   index header, 64 bytes:
 *     0  u64 sample_count       8  u64 field_entry_count (E)
 *     16 u32 block_count       20 u32 name_count (N)
 *     24 u64 names_size        32 u64 keys_size
 *     40..63 reserved, zero
 *   block table, block_count x 40 bytes:
 *     u64 offset, u64 stored_size, u64 raw_size, u64 hash (XXH3-64 of the
 *     stored bytes), u32 codec (0 raw, 1 zstd, 2 zstd with dictionary),
 *     u32 reserved
 *   sample table, sample_count x 32 bytes:
 *     u64 content hash, u64 offset in block data, u32 block,
 *     u32 key_offset (in key table), u16 key_len, u16 field count,
 *     u32 first field entry
 *   field entries, E x 16 bytes:  u64 size, u32 name id, u32 reserved
 *   key order, sample_count x u32: sample numbers sorted by key bytes
 *   name table, names_size bytes: N names, each NUL-terminated, in id order
 *   key table, keys_size bytes: keys back to back (no terminator)
 */
#ifndef CH_SHARD_FORMAT_H
#define CH_SHARD_FORMAT_H

#include <stdint.h>
#include <string.h>

#define CHS_MAGIC "\x89" "CHS\r\n\x1a\n"
#define CHS_FOOTER_MAGIC "CHSFOOT1"
#define CHS_MAJOR 1
#define CHS_MINOR 1
#define CHS_FLAG_DICT 1u

#define CHS_HEADER_SIZE 64
#define CHS_FOOTER_SIZE 64
#define CHS_INDEX_HEADER_SIZE 64
#define CHS_BLOCK_ENTRY_SIZE 40
#define CHS_SAMPLE_ENTRY_SIZE 32
#define CHS_FIELD_ENTRY_SIZE 16

#define CHS_INDEX_RAW 0
#define CHS_INDEX_ZSTD 1
#define CHS_INDEX_PAGED 2

/* A paged index: the page table (u32 page size, u32 page count, then per
 * page u32 frame size, u32 reserved, u64 XXH3-64 of the frame), then the
 * frames; the footer's index hash is the page table's. */
#define CHS_PAGE_TABLE_HEADER 8
#define CHS_PAGE_ENTRY_SIZE 16
#define CHS_PAGE_MIN 4096u
#define CHS_PAGE_MAX (1u << 20)

#endif
