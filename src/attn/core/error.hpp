// The two kinds of failure the tool reports. InputError: the user's input or usage is wrong
// (exit 2, message names the JSON path). InternalError: a bug in attn itself (exit 3).
#pragma once

#include <stdexcept>
#include <string>

namespace attn {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace attn
