// expect: the numbers a document printed, per step id, and how many decimals each was printed with
// (a SAX pass over the text, since the DOM keeps only the double). Comparing them is check.cpp's job.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "attn/error.hpp"
#include "attn/spec/readers.hpp"

namespace attn {

namespace {

// Decimals a number literal shows: "0.73" -> 2, "1.0" -> 1, "5e-3" -> 3, "2" -> 0.
int printed_decimals(std::string_view literal) {
  int frac = 0, exp = 0;
  const auto e = literal.find_first_of("eE");
  const auto mantissa = literal.substr(0, e);
  if (const auto dot = mantissa.find('.'); dot != std::string_view::npos) frac = static_cast<int>(mantissa.size() - dot - 1);
  if (e != std::string_view::npos) exp = std::stoi(std::string(literal.substr(e + 1)));
  return std::max(0, frac - exp);
}

// A SAX pass over the text that records, for each step under "expect", the printed decimals of its
// numbers in document order: the DOM keeps only the double, and 0.73 must mean ±0.005.
class ExpectDecimals final : public json::json_sax_t {
 public:
  std::map<std::string, std::vector<int>> decimals;

  bool null() override { return add(-1); }
  bool boolean(bool) override { return true; }
  // an integer literal ("2") claims an exact value: marked kExactInteger, printed with 0 decimals
  bool number_integer(number_integer_t) override { return add(kExactInteger); }
  bool number_unsigned(number_unsigned_t) override { return add(kExactInteger); }
  bool number_float(number_float_t, const string_t& s) override { return add(printed_decimals(s)); }
  bool string(string_t&) override { return add(-1); }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return push(true); }
  bool end_object() override { return pop(); }
  bool start_array(std::size_t) override { return push(false); }
  bool end_array() override { return pop(); }
  bool key(string_t& k) override {
    frames_.back().key = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  struct Frame {
    bool object;
    std::string key;
  };
  bool push(bool object) {
    frames_.push_back({object, {}});
    return true;
  }
  bool pop() {
    frames_.pop_back();
    return true;
  }
  bool add(int d) {
    // root object -> "expect" object -> step id -> the nested arrays
    if (frames_.size() >= 3 && frames_[0].object && frames_[0].key == "expect" && frames_[1].object) {
      decimals[frames_[1].key].push_back(d);
    }
    return true;
  }
  std::vector<Frame> frames_;
};

}  // namespace

void read_expect(const json& root, std::string_view text, Spec& s) {
  const json& e = root["expect"];
  if (!e.is_object()) fail("expect", fmt::format("expected an object of step ids, like {{\"weights\": [[1, 0], [0.4, 0.6]]}}, got {}", describe(e)));
  ExpectDecimals sax;
  json::sax_parse(text.begin(), text.end(), &sax);
  for (const auto& item : e.items()) {
    const std::string path = key_path("expect", item.key());
    if (item.key() == "tolerance") {
      if (!item.value().is_number() || item.value().get<double>() < 0) {
        fail(path, fmt::format("expected a non-negative number, got {}", describe(item.value())));
      }
      s.expect_tolerance = item.value().get<double>();
      continue;
    }
    Expectation x;
    x.id = item.key();
    // Shape from the first entries, as for tensors; entries may be numbers, null (not printed)
    // or the strings "-inf", "inf", "nan".
    if (!item.value().is_array()) fail(path, fmt::format("expected the printed values as nested arrays, got {}", describe(item.value())));
    const NestedArray a(item.value(), path, {"expected the printed values as nested arrays, got an empty array", false, true});
    x.shape = a.shape();
    a.for_each_leaf([&x](const json& j, const LeafPath& at) {
      if (j.is_null()) {
        x.values.push_back(std::numeric_limits<double>::quiet_NaN());
        x.present.push_back(false);
      } else if (j.is_number()) {
        x.values.push_back(j.get<double>());
        x.present.push_back(true);
      } else if (j.is_string() && (j == "-inf" || j == "inf" || j == "nan")) {
        const auto str = j.get<std::string>();
        x.values.push_back(str == "nan" ? std::numeric_limits<double>::quiet_NaN()
                                        : (str == "inf" ? 1 : -1) * std::numeric_limits<double>::infinity());
        x.present.push_back(true);
      } else {
        fail(at.str(), fmt::format("expected a number, null (not printed), \"-inf\", \"inf\" or \"nan\", got {}", describe(j)));
      }
    });
    x.decimals = sax.decimals[x.id];
    if (x.decimals.size() != x.values.size()) throw InternalError("expect: printed-precision pass disagrees with the values");
    s.expect.push_back(std::move(x));
  }
}

}  // namespace attn
