#pragma once
// SHA-256 (OpenSSL), in base because plans, manifests, selection and the relay all hash.
#include <string>
#include <string_view>

struct evp_md_st;

namespace ootci {

// SHA-256, fetched from the provider once. OpenSSL 3 otherwise looks it up on every call, behind
// a global rwlock that dominated callback profiles.
const evp_md_st* sha256_md();

// Lower-case hex.
std::string to_hex(std::string_view bytes);

std::string sha256_hex(std::string_view data);
// The sha256 of a file's bytes; throws Error naming the file when it cannot be read.
std::string file_sha256_hex(const std::string& path);

}  // namespace ootci
