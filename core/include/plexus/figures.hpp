#pragma once
// Named figures of a report: a strategy's extra figures (MultiplyReport::extra), an operation's
// predicted and extra ones (OperationReport). A multiply's report is made, copied into the
// context's log and into every open LogScope, every multiply; as a std::map<std::string, double>
// each copy allocated one node per figure, and one string more per name beyond the short-string
// buffer (about 150 allocations a multiply on the se class). Figures keeps its entries in one
// vector, sorted by name as a map would be, with the names inline, so a copy is one allocation.
// It reads like the map it replaces: operator[], emplace, insert_or_assign, find, at, count,
// contains, erase, and iteration over entries whose `first` is the name and `second` the value.
#include <compare>
#include <cstddef>
#include <initializer_list>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace plexus {

/// A figure's name, held inline: at most kMaxSize characters (plexus::Error beyond).
class FigureName {
 public:
  static constexpr std::size_t kMaxSize = 46;

  FigureName() = default;
  // Implicit, as a map's std::string key is made from a literal or a string.
  FigureName(std::string_view name);
  FigureName(const char* name) : FigureName(std::string_view(name)) {}
  FigureName(const std::string& name) : FigureName(std::string_view(name)) {}

  std::string_view view() const { return {chars_, size_}; }
  std::string str() const { return std::string(view()); }
  operator std::string_view() const { return view(); }
  const char* c_str() const { return chars_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  friend bool operator==(const FigureName& a, const FigureName& b) { return a.view() == b.view(); }
  friend std::strong_ordering operator<=>(const FigureName& a, const FigureName& b) { return a.view() <=> b.view(); }
  friend std::ostream& operator<<(std::ostream& os, const FigureName& n) { return os << n.view(); }

 private:
  char chars_[kMaxSize + 1] = {};  // NUL-terminated
  unsigned char size_ = 0;
};

/// One figure: `first` its name, `second` its value (the shape of a map's entry).
struct Figure {
  FigureName first;
  double second = 0;
  friend bool operator==(const Figure&, const Figure&) = default;
};

/// Figures by name, sorted by name; names unique.
class Figures {
 public:
  using value_type = Figure;
  using iterator = std::vector<Figure>::iterator;
  using const_iterator = std::vector<Figure>::const_iterator;

  Figures() = default;
  Figures(std::initializer_list<std::pair<std::string_view, double>> figures);
  /// From a map (Collectives::model's figures, a solver's): the same names and values.
  Figures(const std::map<std::string, double>& figures);

  /// The value of `name`, made 0 where there is none yet (as a map's operator[]).
  double& operator[](std::string_view name);
  /// As a map's: adds `name` with `value` where there is none (true), else leaves it (false).
  std::pair<iterator, bool> emplace(std::string_view name, double value);
  /// As a map's: sets `name` to `value`, added where there is none (true) or replaced (false).
  std::pair<iterator, bool> insert_or_assign(std::string_view name, double value);
  iterator find(std::string_view name);
  const_iterator find(std::string_view name) const;
  /// The value of `name`; std::out_of_range where there is none (as a map's at()).
  double& at(std::string_view name);
  double at(std::string_view name) const;
  std::size_t count(std::string_view name) const { return find(name) == end() ? 0 : 1; }
  bool contains(std::string_view name) const { return find(name) != end(); }
  std::size_t erase(std::string_view name);
  /// Adds each of `other`'s figures to the one of its name here (made, at 0, where missing), as
  /// `for (auto& [k, v] : other) (*this)[k] += v;` would, in one pass over both.
  void add(const Figures& other);
  void clear() { items_.clear(); }
  void reserve(std::size_t n) { items_.reserve(n); }

  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }

  /// The same figures as a map (for code that keeps them as one).
  std::map<std::string, double> to_map() const;

  friend bool operator==(const Figures&, const Figures&) = default;

 private:
  iterator lower_bound(std::string_view name);
  const_iterator lower_bound(std::string_view name) const;

  std::vector<Figure> items_;
};

}  // namespace plexus
