#pragma once
#include <functional>
#include <nlohmann/json.hpp>

#include "relay/config.h"

namespace httplib {
class Server;
}

namespace ootci {

class Store;
class AllowlistSource;

// Mounts the HUD pages (/crcr, /crcr/{org}/{repo}, /crcr/job, /crcr/metrics, /pr/{n}) and their
// JSON API (/api/crcr/...) on the relay's HTTP server. `relay_health` feeds the health card;
// `l4` is what an L3 repo's readiness panel measures.
void register_hud_routes(httplib::Server& http, Store& store, AllowlistSource& allowlist,
                         std::function<nlohmann::json()> relay_health, const L4Criteria& l4);

}  // namespace ootci
