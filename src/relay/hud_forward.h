#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "relay_store/store.h"

namespace ootci {

// CRCR's relay → HUD envelope: `trusted` is what the relay derived (the verified repo, its level,
// queue and execution time in seconds), `untrusted` is the downstream body verbatim.
nlohmann::json hud_envelope(const JobRecord& job, const nlohmann::json& callback_body);
TaskItem hud_forward_task(const JobRecord& job, const nlohmann::json& callback_body,
                          int64_t now_ms);

}  // namespace ootci
