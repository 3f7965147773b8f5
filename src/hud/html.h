#pragma once
#include <string>

#include "base/html_escape.h"

namespace ootci {

// The page frame: navigation, the stylesheet, no external resources.
std::string html_page(const std::string& title, const std::string& body);

}  // namespace ootci
