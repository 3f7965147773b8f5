#include "hud/hud_routes.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "base/time.h"
#include "hud/hud_api.h"
#include "hud/hud_pages.h"
#include "net/reply.h"
#include "relay/allowlist.h"
#include "relay_store/store.h"

namespace ootci {
namespace {

// One route serves a page and its API: `build` makes the JSON (or null for 404), `render` the page.
using Build = std::function<nlohmann::json(const httplib::Request&, const HudQuery&)>;
using Render = std::function<std::string(const nlohmann::json&)>;

void both(httplib::Server& http, const std::string& page_path, const std::string& api_path,
          Build build, Render render) {
  auto handle = [build, render](const httplib::Request& req, httplib::Response& res, bool api) {
    HudQuery q;
    q.now_ms = now_ms();
    std::string err = parse_hud_query(
        [&](const std::string& k) {
          return req.has_param(k.c_str()) ? req.get_param_value(k.c_str()) : "";
        },
        &q);
    try {
      nlohmann::json doc = err.empty() ? build(req, q) : nlohmann::json();
      int status = !err.empty() ? 400 : doc.is_null() ? 404 : 200;
      if (status != 200 && err.empty()) err = "not found";
      if (api)
        send_reply(res, json_reply(status, status == 200 ? doc : nlohmann::json{{"detail", err}}));
      else
        send_html(res, status, status == 200 ? render(doc) : error_page(status, err));
    } catch (const std::exception& e) {
      spdlog::error("HUD {}: {}", req.path, e.what());
      if (api)
        send_reply(res, json_reply(500, {{"detail", "Internal server error"}}));
      else
        send_html(res, 500, error_page(500, "Internal server error"));
    }
  };
  http.Get(page_path, [handle](const httplib::Request& req, httplib::Response& res) {
    handle(req, res, false);
  });
  http.Get(api_path, [handle](const httplib::Request& req, httplib::Response& res) {
    handle(req, res, true);
  });
}

}  // namespace

void register_hud_routes(httplib::Server& http, Store& store, AllowlistSource& allowlist,
                         std::function<nlohmann::json()> relay_health,
                         const HudSettings& settings) {
  // Upstream's shape and errors: GET only (405 {"error"}), 500 {"error": message}.
  http.Get("/api/crcr/level-status", [&store, &allowlist, levels = settings.levels](
                                         const httplib::Request&, httplib::Response& res) {
    try {
      send_reply(res, json_reply(200, level_status_json(level_statuses(store, *allowlist.get(),
                                                                       now_ms(), levels))));
    } catch (const std::exception& e) {
      spdlog::error("HUD /api/crcr/level-status: {}", e.what());
      send_reply(res, json_reply(500, {{"error", e.what()}}));
    }
  });
  auto method_not_allowed = [](const httplib::Request&, httplib::Response& res) {
    send_reply(res, json_reply(405, {{"error", "Method not allowed"}}));
  };
  http.Post("/api/crcr/level-status", method_not_allowed);
  http.Put("/api/crcr/level-status", method_not_allowed);
  http.Delete("/api/crcr/level-status", method_not_allowed);
  http.Patch("/api/crcr/level-status", method_not_allowed);
  http.Get("/api/crcr/allowlist", [&allowlist](const httplib::Request&, httplib::Response& res) {
    try {
      send_reply(res, json_reply(200, allowlist_json(*allowlist.get())));
    } catch (const std::exception& e) {
      send_reply(res, json_reply(502, {{"detail", "allowlist unavailable"}}));
    }
  });
  both(
      http, "/crcr", "/api/crcr/summary",
      [&, relay_health, settings](const httplib::Request&, const HudQuery& q) {
        return summary_json(store, *allowlist.get(), q, relay_health(), settings);
      },
      summary_page);
  both(
      http, "/crcr/metrics", "/api/crcr/metrics",
      [&](const httplib::Request&, const HudQuery& q) { return metrics_json(store, q); },
      metrics_page);
  both(
      http, "/crcr/job", "/api/crcr/job",
      [&](const httplib::Request& req, const HudQuery&) {
        return job_json(store, req.has_param("key") ? req.get_param_value("key") : "");
      },
      job_page);
  both(
      http, R"(/crcr/([^/]+)/([^/]+))", R"(/api/crcr/repo/([^/]+)/([^/]+))",
      [&, settings](const httplib::Request& req, const HudQuery& q) {
        return repo_json(store, *allowlist.get(),
                         std::string(req.matches[1]) + "/" + std::string(req.matches[2]), q,
                         settings);
      },
      repo_page);
  both(
      http, R"(/pr/(\d+))", R"(/api/crcr/pr/(\d+))",
      [&](const httplib::Request& req, const HudQuery&) {
        return pr_json(store, *allowlist.get(), std::stoll(req.matches[1]));
      },
      pr_page);
}

}  // namespace ootci
