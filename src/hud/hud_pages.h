#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace ootci {

// Server-rendered HUD pages, each drawn from the JSON document of its API. Key numbers carry a
// data-key attribute, so tests can read them back and compare with the API.
std::string summary_page(const nlohmann::json& summary);
std::string repo_page(const nlohmann::json& repo);
std::string job_page(const nlohmann::json& job);
std::string metrics_page(const nlohmann::json& metrics);
std::string pr_page(const nlohmann::json& pr);
std::string error_page(int status, const std::string& message);

}  // namespace ootci
