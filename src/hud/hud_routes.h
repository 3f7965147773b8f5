#pragma once
#include <functional>
#include <nlohmann/json.hpp>

#include "hud/hud_api.h"

namespace httplib {
class Server;
}

namespace ootci {

class Store;
class AllowlistSource;

// Mounts the HUD pages (/crcr, /crcr/{org}/{repo}, /crcr/job, /crcr/metrics, /pr/{n}) and their
// JSON API (/api/crcr/..., /api/crcr/level-status as upstream HUD serves it) on the relay's HTTP
// server. `relay_health` feeds the health card; `settings` are the operator's criteria.
void register_hud_routes(httplib::Server& http, Store& store, AllowlistSource& allowlist,
                         std::function<nlohmann::json()> relay_health, const HudSettings& settings);

}  // namespace ootci
