#include "plexus/figures.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "plexus/error.hpp"

namespace plexus {

FigureName::FigureName(std::string_view name) {
  if (name.size() > kMaxSize)
    throw Error("Figures", "the figure name '" + std::string(name) + "' is longer than " + std::to_string(kMaxSize) +
                               " characters");
  std::memcpy(chars_, name.data(), name.size());
  chars_[name.size()] = '\0';
  size_ = static_cast<unsigned char>(name.size());
}

Figures::Figures(std::initializer_list<std::pair<std::string_view, double>> figures) {
  items_.reserve(figures.size());
  for (const auto& [name, value] : figures) (*this)[name] = value;
}

Figures::Figures(const std::map<std::string, double>& figures) {
  items_.reserve(figures.size());
  for (const auto& [name, value] : figures) items_.push_back({name, value});  // already in order
}

Figures::const_iterator Figures::lower_bound(std::string_view name) const {
  return std::lower_bound(items_.begin(), items_.end(), name,
                          [](const Figure& f, std::string_view n) { return f.first.view() < n; });
}

Figures::iterator Figures::lower_bound(std::string_view name) {
  return items_.begin() + (std::as_const(*this).lower_bound(name) - items_.cbegin());
}

double& Figures::operator[](std::string_view name) { return emplace(name, 0.0).first->second; }

void Figures::add(const Figures& other) {
  // Both are sorted by name. Usually every name of `other` is here already (the totals of a
  // repeated operation): added in place. Otherwise one merge into a new vector.
  bool all_here = true;
  for (auto it = items_.cbegin(); const Figure& f : other.items_) {
    while (it != items_.cend() && it->first < f.first) ++it;
    if (it == items_.cend() || !(it->first == f.first)) {
      all_here = false;
      break;
    }
    ++it;
  }
  if (all_here) {
    auto it = items_.begin();
    for (const Figure& f : other.items_) {
      while (it->first < f.first) ++it;
      (it++)->second += f.second;
    }
    return;
  }
  std::vector<Figure> merged;
  merged.reserve(items_.size() + other.items_.size());
  auto a = items_.cbegin(), b = other.items_.cbegin();
  while (a != items_.cend() || b != other.items_.cend()) {
    if (b == other.items_.cend() || (a != items_.cend() && a->first < b->first)) {
      merged.push_back(*a++);
    } else if (a == items_.cend() || b->first < a->first) {
      merged.push_back({b->first, 0.0 + b->second});
      ++b;
    } else {
      merged.push_back({a->first, a->second + b->second});
      ++a;
      ++b;
    }
  }
  items_ = std::move(merged);
}

std::pair<Figures::iterator, bool> Figures::emplace(std::string_view name, double value) {
  auto it = lower_bound(name);
  if (it != items_.end() && it->first.view() == name) return {it, false};
  return {items_.insert(it, Figure{name, value}), true};
}

std::pair<Figures::iterator, bool> Figures::insert_or_assign(std::string_view name, double value) {
  auto [it, added] = emplace(name, value);
  it->second = value;
  return {it, added};
}

Figures::const_iterator Figures::find(std::string_view name) const {
  auto it = lower_bound(name);
  return it != items_.end() && it->first.view() == name ? it : items_.end();
}

Figures::iterator Figures::find(std::string_view name) {
  return items_.begin() + (std::as_const(*this).find(name) - items_.cbegin());
}

double Figures::at(std::string_view name) const {
  auto it = find(name);
  if (it == items_.end()) throw std::out_of_range("Figures::at: no figure '" + std::string(name) + "'");
  return it->second;
}

double& Figures::at(std::string_view name) {
  auto it = find(name);
  if (it == items_.end()) throw std::out_of_range("Figures::at: no figure '" + std::string(name) + "'");
  return it->second;
}

std::size_t Figures::erase(std::string_view name) {
  auto it = find(name);
  if (it == items_.end()) return 0;
  items_.erase(it);
  return 1;
}

std::map<std::string, double> Figures::to_map() const {
  std::map<std::string, double> m;
  for (const Figure& f : items_) m.emplace_hint(m.end(), f.first.str(), f.second);
  return m;
}

}  // namespace plexus
