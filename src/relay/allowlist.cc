#include "relay/allowlist.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>

#include "base/text.h"
#include "base/time.h"
#include "net/http_client.h"

namespace ootci {
namespace {

// Oncalls are a YAML list or a comma-separated string ("@a, b"); CRCR and HUD accept both.
std::vector<std::string> parse_oncalls(const YamlDoc& doc, const YAML::Node& n,
                                       const std::string& path) {
  std::vector<std::string> out;
  if (!n || n.IsNull()) return out;
  if (n.IsScalar()) {
    std::string s = n.Scalar();
    size_t start = 0;
    while (start <= s.size()) {
      size_t comma = s.find(',', start);
      std::string item =
          trim(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (!item.empty()) out.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return out;
  }
  if (!n.IsSequence()) yaml_fail(doc, n, path, "oncalls must be a string or a list of strings");
  for (size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar())
      yaml_fail(doc, n[i], fmt::format("{}[{}]", path, i), "oncall must be a string");
    out.push_back(trim(n[i].Scalar()));
  }
  return out;
}

struct EntryValue {
  std::vector<std::string> oncalls;
  std::vector<std::string> events;
};

std::vector<std::string> parse_events(const YamlDoc& doc, const YAML::Node& n,
                                      const std::string& path) {
  std::vector<std::string> out;
  std::vector<YAML::Node> items;
  if (n.IsScalar()) {
    items.push_back(n);
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) items.push_back(n[i]);
  } else {
    yaml_fail(doc, n, path, "events must be a list of event names");
  }
  if (items.empty()) yaml_fail(doc, n, path, "events must name at least one event");
  const auto& known = participation_events();
  for (const YAML::Node& item : items) {
    std::string name = item.IsScalar() ? trim(item.Scalar()) : "";
    if (std::find(known.begin(), known.end(), name) == known.end())
      yaml_fail(doc, item, path,
                fmt::format("'{}' is not an event (expected pull_request, push, nightly or "
                            "periodic)",
                            item.IsScalar() ? item.Scalar() : "a non-string"));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

// What stands after a repo: its oncalls, or a mapping with oncalls and events. A mapping with
// neither key is read as oncalls (and refused as CRCR refuses it); another key beside them is a
// warning, so a newer upstream file still loads.
EntryValue parse_entry_value(const YamlDoc& doc, const YAML::Node& n, const std::string& path,
                             std::vector<std::string>* warnings) {
  if (!n.IsMap() || (!n["oncalls"] && !n["events"])) return {parse_oncalls(doc, n, path), {}};
  EntryValue out;
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string key = it->first.Scalar();
    if (key == "oncalls")
      out.oncalls = parse_oncalls(doc, it->second, path + ".oncalls");
    else if (key == "events")
      out.events = parse_events(doc, it->second, path + ".events");
    else
      warnings->push_back(yaml_message(doc, it->first, path + "." + key,
                                       "unknown key ignored (expected oncalls or events)"));
  }
  return out;
}

// CRCR strips spaces and slashes around a repo name ("a/b/" is a/b).
std::string repo_name(const std::string& raw) {
  std::string s = trim(raw);
  size_t first = s.find_first_not_of('/'), last = s.find_last_not_of('/');
  return first == std::string::npos ? "" : s.substr(first, last - first + 1);
}

void check_repo(const YamlDoc& doc, const YAML::Node& n, const std::string& path,
                const std::string& repo) {
  size_t slash = repo.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == repo.size() ||
      repo.find('/', slash + 1) != std::string::npos)
    yaml_fail(doc, n, path, fmt::format("'{}' is not an owner/repo name", repo));
}

}  // namespace

const std::vector<std::string>& participation_events() {
  static const std::vector<std::string> events = {"pull_request", "push", "nightly", "periodic"};
  return events;
}

bool AllowlistEntry::takes_part_in(const std::string& event) const {
  return events.empty() || std::find(events.begin(), events.end(), event) != events.end();
}

std::string to_string(Level level) {
  return level == Level::kNone ? "none" : "L" + std::to_string(static_cast<int>(level));
}

Allowlist Allowlist::parse(const YamlDoc& doc) {
  Allowlist out;
  const YAML::Node& root = doc.root;
  if (root.IsNull()) return out;  // an empty file allows nobody
  if (!root.IsMap()) yaml_fail(doc, root, "", "the allowlist must be a mapping of L1..L4");
  std::map<std::string, std::string> seen_at;  // repo → where it was first listed
  auto add = [&](const YAML::Node& where, const std::string& path, AllowlistEntry e) {
    std::string raw = e.repo;
    e.repo = repo_name(raw);
    if (e.repo != raw)
      out.warnings_.push_back(yaml_message(
          doc, where, path, fmt::format("'{}' is read as '{}', as CRCR reads it", raw, e.repo)));
    check_repo(doc, where, path, e.repo);
    auto [it, fresh] = seen_at.emplace(e.repo, yaml_where(doc, where));
    if (!fresh)
      yaml_fail(doc, where, path, fmt::format("'{}' is already listed at {}", e.repo, it->second));
    out.index_[e.repo] = out.entries_.size();
    out.entries_.push_back(std::move(e));
  };
  for (auto it = root.begin(); it != root.end(); ++it) {
    std::string key = it->first.Scalar();
    YAML::Node value = it->second;
    Level level = key == "L1"   ? Level::kL1
                  : key == "L2" ? Level::kL2
                  : key == "L3" ? Level::kL3
                  : key == "L4" ? Level::kL4
                                : Level::kNone;
    if (level == Level::kNone) {
      // CRCR reads only L1..L4 and ignores the rest; a typo still deserves a word.
      out.warnings_.push_back(
          yaml_message(doc, it->first, key, "unknown key ignored (expected L1, L2, L3 or L4)"));
      continue;
    }
    if (value.IsNull()) continue;
    if (level == Level::kL3) {
      if (!value.IsMap()) yaml_fail(doc, value, key, "L3 must map device → repo → oncalls");
      for (auto dev = value.begin(); dev != value.end(); ++dev) {
        std::string device = dev->first.Scalar();
        std::string dpath = "L3." + device;
        if (trim(device).empty()) yaml_fail(doc, dev->first, "L3", "empty device name");
        if (!dev->second.IsMap())
          yaml_fail(doc, dev->second, dpath, "expected a mapping of repo → oncalls");
        for (auto r = dev->second.begin(); r != dev->second.end(); ++r) {
          std::string repo = r->first.Scalar();
          EntryValue v = parse_entry_value(doc, r->second, dpath + "." + repo, &out.warnings_);
          add(r->first, dpath + "." + repo, {repo, level, v.oncalls, device, v.events});
        }
      }
      continue;
    }
    if (!value.IsSequence()) yaml_fail(doc, value, key, "expected a list of repos");
    for (size_t i = 0; i < value.size(); ++i) {
      YAML::Node item = value[i];
      std::string path = fmt::format("{}[{}]", key, i);
      if (item.IsScalar()) {
        add(item, path, {item.Scalar(), level, {}, "", {}});
      } else if (item.IsMap() && item.size() == 1) {
        auto kv = item.begin();
        EntryValue v = parse_entry_value(doc, kv->second, path, &out.warnings_);
        add(kv->first, path, {kv->first.Scalar(), level, v.oncalls, "", v.events});
      } else {
        yaml_fail(doc, item, path, "expected `owner/repo` or `owner/repo: oncalls`");
      }
    }
  }
  return out;
}

std::vector<std::string> Allowlist::targets() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.repo);
  std::sort(out.begin(), out.end());
  return out;
}

const AllowlistEntry* Allowlist::find(const std::string& repo) const {
  auto it = index_.find(repo);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

Level Allowlist::level_of(const std::string& repo) const {
  const AllowlistEntry* e = find(repo);
  return e ? e->level : Level::kNone;
}

std::vector<std::string> Allowlist::l3_repos_for_device(const std::string& device) const {
  std::vector<std::string> out;
  for (const auto& e : entries_)
    if (e.level == Level::kL3 && e.device == device) out.push_back(e.repo);
  return out;
}

AllowlistSource::AllowlistSource(std::string location, int64_t ttl_s, std::string github_api_url)
    : location_(std::move(location)), ttl_s_(ttl_s), github_api_url_(std::move(github_api_url)) {}

std::shared_ptr<const Allowlist> AllowlistSource::load() {
  bool remote = location_.rfind("http://", 0) == 0 || location_.rfind("https://", 0) == 0;
  if (!remote) return std::make_shared<Allowlist>(Allowlist::parse(load_yaml_file(location_)));
  HttpRequest req;
  req.url = location_;
  // github.com/<owner>/<repo>/blob/<ref>/<path> is read through the contents API, as CRCR does.
  const std::string gh = "https://github.com/";
  if (location_.rfind(gh, 0) == 0) {
    std::string rest = location_.substr(gh.size());
    size_t blob = rest.find("/blob/");
    if (blob == std::string::npos) throw Error(location_ + ": expected a github.com blob URL");
    std::string repo = rest.substr(0, blob);
    std::string ref_path = rest.substr(blob + 6);
    size_t slash = ref_path.find('/');
    if (slash == std::string::npos) throw Error(location_ + ": blob URL has no file path");
    req.url = fmt::format("{}/repos/{}/contents/{}?ref={}", github_api_url_, repo,
                          ref_path.substr(slash + 1), ref_path.substr(0, slash));
    req.headers = {{"Accept", "application/vnd.github.raw"}, {"User-Agent", "ootci-relay"}};
  }
  HttpResult res = http_send(req);
  if (res.status != 200)
    throw Error(fmt::format("{}: fetch failed: {}", location_,
                            res.status ? "HTTP " + std::to_string(res.status) : res.error));
  return std::make_shared<Allowlist>(Allowlist::parse(load_yaml_text(location_, res.body)));
}

std::shared_ptr<const Allowlist> AllowlistSource::get() {
  bool remote = location_.rfind("http://", 0) == 0 || location_.rfind("https://", 0) == 0;
  std::unique_lock lock(mu_);
  if (remote) {
    if (current_ && now_s() - loaded_at_s_ < ttl_s_) return current_;
    // One thread refreshes, outside the lock; the others keep serving the last allowlist, so a
    // slow contents API never stalls webhook or callback intake.
    if (current_ && fetching_) return current_;
    fetching_ = true;
    lock.unlock();
    std::shared_ptr<const Allowlist> fresh;
    std::string error;
    try {
      fresh = load();
    } catch (const Error& e) {
      error = e.what();
    }
    lock.lock();
    fetching_ = false;
    loaded_at_s_ = now_s();  // a failing source is retried after the TTL, not hammered
    if (fresh) {
      install(fresh);
    } else if (!current_) {
      throw Error(error);
    } else {
      spdlog::error("allowlist reload failed, keeping the previous one: {}", error);
    }
    return current_;
  }
  // A local file: a stat per call is cheap, but at thousands of calls per second once every
  // 200 ms is plenty.
  if (current_ && now_ms() - checked_at_ms_ < 200) return current_;
  checked_at_ms_ = now_ms();
  int64_t mtime = -1;
  struct stat st;
  if (stat(location_.c_str(), &st) == 0)
    mtime = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (current_ && mtime == mtime_ns_) return current_;
  try {
    install(load());
    mtime_ns_ = mtime;
  } catch (const Error& e) {
    if (!current_) throw;
    spdlog::error("allowlist reload failed, keeping the previous one: {}", e.what());
    mtime_ns_ = mtime;  // retried when the file changes again
  }
  return current_;
}

bool AllowlistSource::reload() {
  std::shared_ptr<const Allowlist> fresh;
  try {
    fresh = load();
  } catch (const Error& e) {
    spdlog::error("allowlist reload failed, keeping the previous one: {}", e.what());
    return false;
  }
  std::lock_guard lock(mu_);
  install(std::move(fresh));
  loaded_at_s_ = now_s();
  return true;
}

void AllowlistSource::install(std::shared_ptr<const Allowlist> fresh) {
  current_ = std::move(fresh);
  spdlog::info("allowlist loaded from {}: {} repos", location_, current_->entries().size());
  for (const std::string& w : current_->warnings()) spdlog::warn("allowlist: {}", w);
  if (on_load_) {
    try {
      on_load_(*current_);
    } catch (const std::exception& e) {
      spdlog::error("allowlist on-load hook: {}", e.what());
    }
  }
}

}  // namespace ootci
