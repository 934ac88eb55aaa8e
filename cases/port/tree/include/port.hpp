#pragma once

namespace net {

// The port number `text` spells in decimal (1..65535), or -1. No standard header here
// on purpose: the coverage build keeps every inline function it sees.
int parse_port(const char* text);

}  // namespace net
