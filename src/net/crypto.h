#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "base/sha256.h"  // sha256_hex, which every signature check uses alongside these

namespace ootci {

std::string hmac_sha256(std::string_view key, std::string_view data);
std::string hmac_sha256_hex(std::string_view key, std::string_view data);
// Compares in time independent of where the inputs differ, so signatures cannot be guessed
// byte by byte.
bool constant_time_equal(std::string_view a, std::string_view b);
// GitHub's "sha256=<hex>" header value.
std::string github_signature(std::string_view secret, std::string_view body);

std::string base64url_encode(std::string_view data);
// Decodes the standard alphabet too, with or without padding.
std::optional<std::string> base64url_decode(std::string_view text);
// The standard alphabet with padding, as GitHub's contents API takes it.
std::string base64_encode(std::string_view data);

std::string random_hex(size_t bytes);

// A fresh RSA-2048 key as PKCS#8 PEM; for tests and `ootci` key generation.
std::string generate_rsa_private_key_pem();
std::string public_key_pem_from_private(const std::string& private_pem);

}  // namespace ootci
