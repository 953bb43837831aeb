// The translate page's files (src/tfm/serve/page/), compiled into the server: a C++ source
// generated at build time from them (cmake/embed_files.cmake), so the page needs no files at run
// time, no framework and no build step of its own.
#pragma once

#include <string_view>

namespace tfm::serve {

struct StaticFile {
  std::string_view path;          // "/", "/app.js", ...
  std::string_view content_type;  // "text/html; charset=utf-8", ...
  std::string_view body;
};

// The file served at `path` ("/" and "/index.html" are the page), or nullptr.
const StaticFile* find_static_file(std::string_view path);

}  // namespace tfm::serve
