#include "net/jwt.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>

#include "base/error.h"
#include "net/crypto.h"

namespace ootci {
namespace {

using PKey = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

PKey read_private(const std::string& pem) {
  Bio in(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  PKey key(PEM_read_bio_PrivateKey(in.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
  if (!key) throw Error("cannot parse the RSA private key (PEM)");
  return key;
}

PKey read_public(const std::string& pem) {
  Bio in(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  return PKey(PEM_read_bio_PUBKEY(in.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
}

std::string signing_input(const nlohmann::json& header, const nlohmann::json& claims) {
  return base64url_encode(header.dump()) + "." + base64url_encode(claims.dump());
}

}  // namespace

std::string jwt_sign_rs256(const nlohmann::json& claims, const std::string& private_key_pem,
                           const std::string& kid) {
  nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  if (!kid.empty()) header["kid"] = kid;
  std::string input = signing_input(header, claims);
  PKey key = read_private(private_key_pem);
  MdCtx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  size_t len = 0;
  if (EVP_DigestSignInit(ctx.get(), nullptr, sha256_md(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()),
                     input.size()) != 1)
    throw Error("RS256 signing failed");
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1)
    throw Error("RS256 signing failed");
  sig.resize(len);
  return input + "." + base64url_encode(sig);
}

std::string jwt_sign_hs256(const nlohmann::json& claims, const std::string& key) {
  std::string input = signing_input({{"alg", "HS256"}, {"typ", "JWT"}}, claims);
  return input + "." + base64url_encode(hmac_sha256(key, input));
}

std::optional<JwtParts> jwt_decode(const std::string& token) {
  size_t a = token.find('.');
  if (a == std::string::npos) return std::nullopt;
  size_t b = token.find('.', a + 1);
  if (b == std::string::npos || token.find('.', b + 1) != std::string::npos) return std::nullopt;
  auto h = base64url_decode(std::string_view(token).substr(0, a));
  auto c = base64url_decode(std::string_view(token).substr(a + 1, b - a - 1));
  auto s = base64url_decode(std::string_view(token).substr(b + 1));
  if (!h || !c || !s) return std::nullopt;
  JwtParts parts;
  parts.header = nlohmann::json::parse(*h, nullptr, false);
  parts.claims = nlohmann::json::parse(*c, nullptr, false);
  if (!parts.header.is_object() || !parts.claims.is_object()) return std::nullopt;
  parts.signing_input = token.substr(0, b);
  parts.signature = *s;
  return parts;
}

struct PublicKey {
  PKey key{nullptr, EVP_PKEY_free};
};

std::shared_ptr<const PublicKey> parse_public_key(const std::string& pem) {
  auto k = std::make_shared<PublicKey>();
  k->key = read_public(pem);
  return k->key ? k : nullptr;
}

bool jwt_verify_rs256(const JwtParts& parts, const std::string& public_key_pem) {
  auto key = parse_public_key(public_key_pem);
  return key && jwt_verify_rs256(parts, *key);
}

bool jwt_verify_rs256(const JwtParts& parts, const PublicKey& key) {
  if (parts.header.value("alg", "") != "RS256") return false;
  MdCtx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (EVP_DigestVerifyInit(ctx.get(), nullptr, sha256_md(), nullptr, key.key.get()) != 1)
    return false;
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(parts.signature.data()),
                          parts.signature.size(),
                          reinterpret_cast<const unsigned char*>(parts.signing_input.data()),
                          parts.signing_input.size()) == 1;
}

std::optional<nlohmann::json> jwt_verify_hs256(const std::string& token, const std::string& key) {
  auto parts = jwt_decode(token);
  if (!parts || parts->header.value("alg", "") != "HS256") return std::nullopt;
  if (!constant_time_equal(hmac_sha256(key, parts->signing_input), parts->signature))
    return std::nullopt;
  return parts->claims;
}

}  // namespace ootci
