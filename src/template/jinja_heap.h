// Lifetime of the interpreter's lists and dicts. They are shared by reference, as in Python, so a
// template can make one hold itself (`{% set ns.me = ns %}`, `items.append(items)`), which shared
// ownership alone would never free, and can nest them as deep as its step limit allows, which a
// recursive release would overflow the stack on. Every container therefore releases its
// children one level at a time, and a render's arena empties whatever is still alive when the
// render ends, so cycles are broken and nothing outlives the render.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "template/jinja_value.h"

namespace hearth::jinja {

// Shared owners for new containers: released iteratively, and registered with the thread's
// active arena when there is one.
std::shared_ptr<ValueList> adopt_list(ValueList items);
std::shared_ptr<ValueDict> adopt_dict(ValueDict entries);

// Scope of one render on this thread: every container made while it is active is emptied when it
// ends (the render's output is text, so nothing may still need them). Arenas nest; the inner one
// is active until it ends.
class ContainerArena {
 public:
  ContainerArena();
  ~ContainerArena();
  ContainerArena(const ContainerArena&) = delete;
  ContainerArena& operator=(const ContainerArena&) = delete;

  void track(const std::shared_ptr<ValueList>& list);
  void track(const std::shared_ptr<ValueDict>& dict);

 private:
  void drop_expired();

  ContainerArena* previous_;
  std::vector<std::weak_ptr<ValueList>> lists_;
  std::vector<std::weak_ptr<ValueDict>> dicts_;
  size_t compact_at_ = 1024;  // tracked entries that trigger dropping the expired ones
};

}  // namespace hearth::jinja
