// plexus::Figures against the std::map<std::string, double> it replaced in the reports: the same
// operations on both (operator[], emplace, insert_or_assign, erase, find, at, add, copies), with random
// names, must leave the same entries in the same order.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/figures.hpp"

using plexus::Figures;

namespace {

void expect_same(const Figures& f, const std::map<std::string, double>& m) {
  ASSERT_EQ(f.size(), m.size());
  EXPECT_EQ(f.empty(), m.empty());
  auto it = m.begin();
  for (const auto& [name, value] : f) {
    EXPECT_EQ(name.view(), it->first);
    EXPECT_EQ(value, it->second) << name;
    ++it;
  }
  EXPECT_EQ(f.to_map(), m);
}

// What emplace or insert_or_assign returned: the same answer (added or not) for the same entry.
template <class FigureResult, class MapResult>
void expect_same_insertion(const FigureResult& f, const MapResult& m) {
  EXPECT_EQ(f.second, m.second) << m.first->first;
  EXPECT_EQ(f.first->first.view(), m.first->first);
  EXPECT_EQ(f.first->second, m.first->second);
}

}  // namespace

TEST(Figures, EveryOperationDoesWhatTheMapDoes) {
  // Names of 1 to 46 characters from a small alphabet, so that many repeat and many share a
  // prefix (the order is by bytes, as std::string compares).
  std::mt19937 rng(20261128);
  std::uniform_int_distribution<int> length(1, static_cast<int>(plexus::FigureName::kMaxSize));
  std::uniform_int_distribution<int> letter(0, 3);
  std::vector<std::string> names;
  for (int i = 0; i < 60; ++i) {
    std::string n(static_cast<std::size_t>(i < 30 ? 1 + i % 4 : length(rng)), 'a');
    for (char& c : n) c = static_cast<char>("ab_Z"[letter(rng)]);
    names.push_back(n);
  }
  std::uniform_int_distribution<std::size_t> pick(0, names.size() - 1);
  std::uniform_int_distribution<int> op(0, 8);
  Figures f;
  std::map<std::string, double> m;
  for (int step = 0; step < 4000; ++step) {
    const std::string& n = names[pick(rng)];
    const double v = step + 0.5;
    switch (op(rng)) {
      case 0:
      case 1:
        f[n] += v;
        m[n] += v;
        break;
      case 2:
        EXPECT_EQ(f.erase(n), m.erase(n)) << n;
        break;
      case 3: {
        const auto fi = f.find(n);
        const auto mi = m.find(n);
        ASSERT_EQ(fi == f.end(), mi == m.end()) << n;
        if (mi != m.end()) {
          EXPECT_EQ(fi->second, mi->second);
        }
        EXPECT_EQ(f.count(n), m.count(n));
        EXPECT_EQ(f.contains(n), m.contains(n));
        break;
      }
      case 4:
        if (m.contains(n)) {
          EXPECT_EQ(static_cast<const Figures&>(f).at(n), m.at(n));
          f.at(n) = v;
          m.at(n) = v;
        } else {
          EXPECT_THROW((void)static_cast<const Figures&>(f).at(n), std::out_of_range);
          EXPECT_THROW((void)f.at(n), std::out_of_range);
        }
        break;
      case 5:
        expect_same_insertion(f.emplace(n, v), m.emplace(n, v));
        break;
      case 6:
        expect_same_insertion(f.insert_or_assign(n, v), m.insert_or_assign(n, v));
        break;
      case 7: {  // add(): another set of figures, every other time only names that are here already
        Figures other;
        std::map<std::string, double> om;
        for (int i = 0; i < 6; ++i) {
          const std::string& k = names[pick(rng)];
          if (step % 2 == 0 && !m.contains(k)) continue;
          other[k] += i - 2.5;
          om[k] += i - 2.5;
        }
        f.add(other);
        for (const auto& [k, x] : om) m[k] += x;
        break;
      }
      default: {
        const Figures copy = f;  // copies compare equal, and stay apart
        EXPECT_EQ(copy, f);
        Figures other = copy;
        other[n] += 1.0;
        EXPECT_FALSE(other == f);
        EXPECT_EQ(copy, f);
      }
    }
    expect_same(f, m);
  }
  EXPECT_EQ(Figures(m), f);  // from a map: the same entries
  f.clear();
  expect_same(f, {});
}

TEST(Figures, ListsAndNames) {
  const Figures f{{"ticks", 2}, {"products", 10}, {"kernel_seconds", 0.25}, {"ticks", 3}};
  expect_same(f, {{"kernel_seconds", 0.25}, {"products", 10}, {"ticks", 3}});  // the later one wins
  std::ostringstream os;
  for (const auto& [name, value] : f) os << name << "=" << value << ";";
  EXPECT_EQ(os.str(), "kernel_seconds=0.25;products=10;ticks=3;");
  EXPECT_STREQ(f.find("products")->first.c_str(), "products");

  const std::string longest(plexus::FigureName::kMaxSize, 'x');
  Figures g;
  g[longest] = 1;
  EXPECT_EQ(g.begin()->first.str(), longest);
  EXPECT_EQ(g.begin()->first.size(), longest.size());
  try {
    g[longest + "y"] = 2;
    FAIL() << "a name over the limit was taken";
  } catch (const plexus::Error& e) {
    EXPECT_NE(std::string(e.what()).find(longest + "y"), std::string::npos) << e.what();
  }
  expect_same(g, {{longest, 1}});  // the failed insertion left nothing
  g[""] = 4;                      // an empty name is a name, as in a map
  expect_same(g, {{"", 4}, {longest, 1}});
}
