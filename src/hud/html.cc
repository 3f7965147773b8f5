#include "hud/html.h"

#include <fmt/format.h>

namespace ootci {

std::string html_page(const std::string& title, const std::string& body) {
  static const char* css = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
nav{background:#24292f;padding:10px 20px}nav a{color:#fff;margin-right:18px;text-decoration:none;font-weight:600}
main{padding:16px 24px;max-width:1200px}h1{font-size:22px}h2{font-size:17px;margin-top:26px}
table{border-collapse:collapse;background:#fff;width:100%;font-size:14px}
th,td{border:1px solid #d0d7de;padding:6px 8px;text-align:left}th{background:#f0f3f6}
.chip{display:inline-block;min-width:56px;text-align:center;border-radius:10px;padding:2px 8px;font-weight:600}
.green{background:#dafbe1;color:#116329}.yellow{background:#fff8c5;color:#7d4e00}.red{background:#ffebe9;color:#a40e26}
.grey{background:#eaeef2;color:#57606a}
.cards{display:flex;flex-wrap:wrap;gap:12px}.card{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:10px 14px;min-width:150px}
.card .label{font-size:12px;color:#57606a}.card .value{font-size:20px;font-weight:600}
.tabs a{margin-right:10px;padding:3px 8px;border-radius:6px;text-decoration:none;color:#0969da}
.tabs a.on{background:#0969da;color:#fff}
.pass{color:#116329;font-weight:600}.fail{color:#a40e26;font-weight:600}
.badge{border-radius:4px;padding:1px 6px;font-size:12px;background:#ddf4ff;color:#0550ae;font-weight:600}
.box{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:10px 14px;margin:10px 0}
pre{white-space:pre-wrap;background:#f6f8fa;padding:8px;font-size:12px}
.legend span{margin-right:14px;font-size:13px}
.banner{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:10px 14px;margin:12px 0}
.muted{color:#57606a}
)";
  return fmt::format(R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{}</title>
<link rel="icon" href="data:,"><style>{}</style></head>
<body><nav><a href="/crcr">CRCR</a><a href="/crcr/metrics">CRCR Metrics</a></nav>
<main>{}</main></body></html>
)",
                     esc(title), css, body);
}

}  // namespace ootci
