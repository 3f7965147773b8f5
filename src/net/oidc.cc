#include "net/oidc.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "base/error.h"
#include "net/crypto.h"
#include "net/http_client.h"
#include "net/jwt.h"

namespace ootci {
namespace {

constexpr int64_t kMinRefetchIntervalS = 30;  // an attacker's random kids cannot hammer the JWKS

using Bignum = std::unique_ptr<BIGNUM, decltype(&BN_free)>;

std::string bn_to_b64url(const BIGNUM* bn) {
  std::string bytes(BN_num_bytes(bn), '\0');
  BN_bn2bin(bn, reinterpret_cast<unsigned char*>(bytes.data()));
  return base64url_encode(bytes);
}

bool audience_matches(const nlohmann::json& aud, const std::string& want) {
  if (aud.is_string()) return aud.get<std::string>() == want;
  if (aud.is_array())
    for (const auto& a : aud)
      if (a.is_string() && a.get<std::string>() == want) return true;
  return false;
}

}  // namespace

const char* default_jwks_path(const std::string& provider) {
  if (provider == "github" || provider == "buildkite") return "/.well-known/jwks";
  if (provider == "gitlab") return "/oauth/discovery/keys";
  if (provider == "circleci") return "/.well-known/jwks-pub.json";
  return nullptr;
}

std::string rsa_pem_from_jwk(const std::string& n_b64url, const std::string& e_b64url) {
  auto n = base64url_decode(n_b64url);
  auto e = base64url_decode(e_b64url);
  if (!n || !e || n->empty() || e->empty()) return "";
  Bignum bn_n(BN_bin2bn(reinterpret_cast<const unsigned char*>(n->data()), n->size(), nullptr),
              BN_free);
  Bignum bn_e(BN_bin2bn(reinterpret_cast<const unsigned char*>(e->data()), e->size(), nullptr),
              BN_free);
  std::unique_ptr<OSSL_PARAM_BLD, decltype(&OSSL_PARAM_BLD_free)> bld(OSSL_PARAM_BLD_new(),
                                                                      OSSL_PARAM_BLD_free);
  OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get());
  OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get());
  std::unique_ptr<OSSL_PARAM, decltype(&OSSL_PARAM_free)> params(OSSL_PARAM_BLD_to_param(bld.get()),
                                                                 OSSL_PARAM_free);
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr), EVP_PKEY_CTX_free);
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params.get()) != 1)
    return "";
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(raw, EVP_PKEY_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> out(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_PUBKEY(out.get(), key.get());
  char* data = nullptr;
  long len = BIO_get_mem_data(out.get(), &data);
  return std::string(data, len);
}

nlohmann::json rsa_jwk_from_private(const std::string& private_pem, const std::string& kid) {
  std::unique_ptr<BIO, decltype(&BIO_free)> in(
      BIO_new_mem_buf(private_pem.data(), static_cast<int>(private_pem.size())), BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(in.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
  if (!key) throw Error("cannot read RSA private key");
  BIGNUM* n = nullptr;
  BIGNUM* e = nullptr;
  EVP_PKEY_get_bn_param(key.get(), OSSL_PKEY_PARAM_RSA_N, &n);
  EVP_PKEY_get_bn_param(key.get(), OSSL_PKEY_PARAM_RSA_E, &e);
  Bignum hold_n(n, BN_free), hold_e(e, BN_free);
  return {{"kty", "RSA"}, {"alg", "RS256"},       {"use", "sig"},
          {"kid", kid},   {"n", bn_to_b64url(n)}, {"e", bn_to_b64url(e)}};
}

std::optional<JwksKeys> parse_jwks(const std::string& body) {
  auto doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc.contains("keys") || !doc["keys"].is_array()) return std::nullopt;
  auto text = [](const nlohmann::json& k, const char* name) {
    auto it = k.find(name);
    return it != k.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  JwksKeys keys;
  for (const auto& k : doc["keys"]) {
    if (!k.is_object() || text(k, "kty") != "RSA") continue;
    auto parsed = parse_public_key(rsa_pem_from_jwk(text(k, "n"), text(k, "e")));
    if (parsed) keys[text(k, "kid")] = parsed;
  }
  return keys;
}

OidcVerifier::OidcVerifier(std::vector<OidcIssuer> issuers, int64_t leeway_s, int64_t jwks_ttl_s)
    : issuers_(std::move(issuers)), leeway_s_(leeway_s), jwks_ttl_s_(jwks_ttl_s) {}

std::shared_ptr<const PublicKey> OidcVerifier::key_for(const OidcIssuer& issuer,
                                                       const std::string& kid, int64_t now_s) {
  std::unique_lock lock(mu_);
  Jwks& cached = jwks_[issuer.issuer];
  auto lookup = [&]() -> std::shared_ptr<const PublicKey> {
    if (kid.empty())
      return cached.key_by_kid.size() == 1 ? cached.key_by_kid.begin()->second : nullptr;
    auto it = cached.key_by_kid.find(kid);
    return it == cached.key_by_kid.end() ? nullptr : it->second;
  };
  bool expired = now_s - cached.fetched_s >= jwks_ttl_s_;
  auto key = expired ? nullptr : lookup();
  if (key) return key;
  // Before the first keys arrive there is nothing to serve: wait for a fetch in flight.
  fetched_cv_.wait(lock, [&] { return !cached.fetching || !cached.key_by_kid.empty(); });
  // Refetch when the keys expired or an unknown kid appears, but never more than once per 30 s,
  // whether the last attempt worked or not, and by one thread, outside the lock: a failing or
  // hammered JWKS cannot stall callbacks.
  if (cached.fetching || now_s - cached.attempted_s < kMinRefetchIntervalS) return lookup();
  cached.attempted_s = now_s;
  cached.fetching = true;
  lock.unlock();
  HttpRequest req;
  req.url = issuer.jwks_url;
  req.timeout_ms = 5000;
  HttpResult res = http_send(req);
  std::optional<JwksKeys> keys;
  if (res.status == 200) keys = parse_jwks(res.body);
  bool ok = keys.has_value();
  if (ok) {
  } else {
    spdlog::error("JWKS fetch from {} failed: {}", issuer.jwks_url,
                  res.status ? "HTTP " + std::to_string(res.status) : res.error);
  }
  lock.lock();
  cached.fetching = false;
  if (ok) {  // otherwise keep serving the keys we had
    cached.key_by_kid = std::move(*keys);
    cached.fetched_s = now_s;
  }
  fetched_cv_.notify_all();
  return lookup();
}

std::variant<VerifiedToken, std::string> OidcVerifier::verify(const std::string& token,
                                                              int64_t now_s) {
  try {
    return verify_checked(token, now_s);
  } catch (const nlohmann::json::exception&) {
    return std::string("malformed token");  // a claim of the wrong JSON type
  }
}

std::variant<VerifiedToken, std::string> OidcVerifier::verify_checked(const std::string& token,
                                                                      int64_t now_s) {
  auto parts = jwt_decode(token);
  if (!parts) return std::string("malformed token");
  if (parts->header.value("alg", "") != "RS256") return std::string("unsupported algorithm");
  std::string iss = parts->claims.value("iss", "");
  const OidcIssuer* issuer = nullptr;
  for (const auto& i : issuers_)
    if (i.issuer == iss) issuer = &i;
  if (!issuer) return std::string("unsupported issuer");
  std::string kid = parts->header.value("kid", "");
  auto key = key_for(*issuer, kid, now_s);
  if (!key) return std::string("unknown signing key");
  if (!jwt_verify_rs256(*parts, *key)) return std::string("bad signature");
  const auto& c = parts->claims;
  if (!c.contains("aud") || !audience_matches(c["aud"], issuer->audience))
    return std::string("wrong audience");
  if (!c.contains("exp") || !c["exp"].is_number()) return std::string("missing exp");
  if (c["exp"].get<double>() < now_s - leeway_s_) return std::string("token expired");
  if (c.contains("nbf") && c["nbf"].is_number() && c["nbf"].get<double>() > now_s + leeway_s_)
    return std::string("token not yet valid");
  if (c.contains("iat") && c["iat"].is_number() && c["iat"].get<double>() > now_s + leeway_s_)
    return std::string("token issued in the future");
  return VerifiedToken{issuer, c};
}

}  // namespace ootci
