"""The symbol versions an ELF file needs (its .gnu.version_r), and the one edit the wheel makes.

Hand-written rather than pyelftools or readelf: the wheel must also drop a version need, which no
Debian tool does (patchelf clears a symbol's version but leaves the need in place), and reading
the same table takes a few lines more. ELF64 little-endian only (the wheel is x86-64).
"""
import struct
from dataclasses import dataclass

SHT_GNU_VERNEED = 0x6FFFFFFE
SHT_GNU_VERSYM = 0x6FFFFFFF
VER_FLG_WEAK = 0x2


@dataclass
class VersionNeed:
    library: str     # the vn_file: libc.so.6
    name: str        # the version: GLIBC_2.34
    index: int       # vna_other: what .gnu.version entries say for symbols of this version
    weak: bool
    need_offset: int  # file offsets of the Elf64_Verneed and Elf64_Vernaux records
    aux_offset: int
    prev_aux_offset: int  # the record before this one in the chain, or -1 when it is the first


def _sections(data):
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    for i in range(shnum):
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, ...
        yield struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)


def _string(data, table_offset, at):
    start = table_offset + at
    return data[start:data.index(b"\0", start)].decode()


def version_needs(data):
    """Every (library, version) the file needs, in file order."""
    sections = list(_sections(data))
    needs = []
    for _, sh_type, _, _, offset, _, link, count, _, _ in sections:
        if sh_type != SHT_GNU_VERNEED:
            continue
        strtab = sections[link][4]
        need = offset
        for _ in range(count):
            _, aux_count, file_at, aux_rel, next_rel = struct.unpack_from("<HHIII", data, need)
            aux, prev = need + aux_rel, -1
            for _ in range(aux_count):
                _, flags, other, name_at, aux_next = struct.unpack_from("<IHHII", data, aux)
                needs.append(VersionNeed(
                    _string(data, strtab, file_at), _string(data, strtab, name_at),
                    other & 0x7FFF, bool(flags & VER_FLG_WEAK), need, aux, prev))
                if not aux_next:
                    break
                prev, aux = aux, aux + aux_next
            if not next_rel:
                break
            need += next_rel
    return needs


def used_version_indexes(data):
    """The version indexes that the dynamic symbols refer to (.gnu.version)."""
    for _, sh_type, _, _, offset, size, _, _, _, _ in _sections(data):
        if sh_type == SHT_GNU_VERSYM:
            return {v & 0x7FFF for v in struct.unpack_from(f"<{size // 2}H", data, offset)}
    return set()


def drop_unused_need(data, need):
    """Unlinks `need` from its library's chain, in place. Only for a version no symbol uses any
    more (after `patchelf --clear-symbol-version`): the loader checks every need it finds, used or
    not, so an unused GLIBCXX_3.4.30 still refuses to start on GCC 11's libstdc++."""
    if need.index in used_version_indexes(data):
        raise ValueError(f"{need.name} is still used by a symbol")
    _, _, _, _, aux_next = struct.unpack_from("<IHHII", data, need.aux_offset)
    version, count, file_at, aux_rel, next_rel = struct.unpack_from("<HHIII", data,
                                                                     need.need_offset)
    if count == 1:
        raise ValueError(f"{need.name} is the only version needed from {need.library}")
    if need.prev_aux_offset < 0:
        aux_rel += aux_next
    else:
        prev = struct.unpack_from("<IHHII", data, need.prev_aux_offset)
        link = prev[4] + aux_next if aux_next else 0
        struct.pack_into("<IHHII", data, need.prev_aux_offset, *prev[:4], link)
    struct.pack_into("<HHIII", data, need.need_offset, version, count - 1, file_at, aux_rel,
                     next_rel)
