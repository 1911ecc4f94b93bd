#pragma once
// Where the shipped data (topologies/, models/, scenarios/) lives, for lookups by name such as
// `topology: juwels-booster` or `model: resnet50`.
#include <filesystem>
#include <string>
#include <vector>

namespace ddlsim {

// The data roots, in lookup order: $DDLSIM_DATA if set and not empty; <dir of this
// executable>/../share/ddlsim (an installed tree: bin/ddlsim next to share/ddlsim); <dir of this
// executable>/share/ddlsim (the build tree, where CMake links share/ddlsim/{topologies,models,scenarios} to
// the source folders). Roots are listed whether they exist or not (a lookup reports every path it tried).
std::vector<std::filesystem::path> data_roots();

// The first of `candidates` that is a regular file, its path lexically normalised; when none is, the empty
// string, and `tried` lists the distinct candidates in order, comma-separated (for the error message).
std::string first_file(const std::vector<std::filesystem::path>& candidates, std::string& tried);

}  // namespace ddlsim
