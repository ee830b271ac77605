#pragma once
// JSON text written straight into a request body. Building an nlohmann tree of the whole
// conversation and dumping it cost ~5 µs a message on every request, on the path between a
// tool's result and the next request; writing the text costs about what copying it does.

#include <string>
#include <string_view>

namespace troupe {

/// Appends `text` as a JSON string, quotes included, byte for byte as nlohmann's
/// dump(-1, ' ', false, error_handler_t::replace) writes it: \" \\ \b \f \n \r \t, \u00xx for
/// the other control characters, UTF-8 as it is, and U+FFFD for each maximal part of an
/// ill-formed sequence (Unicode's "maximal subpart" practice).
void append_json_string(std::string& out, std::string_view text);

} // namespace troupe
