#pragma once

// Start up and say so on stdout.
void serve();
