// Iterative release and per-render arenas for the interpreter's containers (see jinja_heap.h).
#include "template/jinja_heap.h"

#include <algorithm>
#include <utility>

namespace hearth::jinja {
namespace {

thread_local ContainerArena* t_active_arena = nullptr;
// While a container is being released, the children it was the last owner of wait here instead
// of being released inside it, so a chain a million lists deep costs one stack frame.
thread_local std::vector<Value>* t_pending_release = nullptr;

bool holds_references(const Value& v) { return v.is_list() || v.is_dict() || v.is_callable(); }

void move_children(ValueList& items, std::vector<Value>& sink) {
  for (Value& v : items) {
    if (holds_references(v)) sink.push_back(std::move(v));
  }
}
void move_children(ValueDict& dict, std::vector<Value>& sink) {
  for (auto& entry : dict.entries) {
    if (holds_references(entry.second)) sink.push_back(std::move(entry.second));
  }
}

template <typename Container>
void release_iteratively(Container* container) {
  if (t_pending_release != nullptr) {  // inside another release: queue the children, free this level
    move_children(*container, *t_pending_release);
    delete container;
    return;
  }
  std::vector<Value> pending;
  t_pending_release = &pending;
  move_children(*container, pending);
  delete container;
  while (!pending.empty()) {
    Value next = std::move(pending.back());
    pending.pop_back();
  }  // `next` dies here; if it was the last owner, its children join `pending`
  t_pending_release = nullptr;
}

}  // namespace

std::shared_ptr<ValueList> adopt_list(ValueList items) {
  std::shared_ptr<ValueList> list(new ValueList(std::move(items)), &release_iteratively<ValueList>);
  if (t_active_arena != nullptr) t_active_arena->track(list);
  return list;
}

std::shared_ptr<ValueDict> adopt_dict(ValueDict entries) {
  std::shared_ptr<ValueDict> dict(new ValueDict(std::move(entries)), &release_iteratively<ValueDict>);
  if (t_active_arena != nullptr) t_active_arena->track(dict);
  return dict;
}

ContainerArena::ContainerArena() : previous_(t_active_arena) { t_active_arena = this; }

ContainerArena::~ContainerArena() {
  t_active_arena = previous_;
  std::vector<std::shared_ptr<ValueList>> lists;
  std::vector<std::shared_ptr<ValueDict>> dicts;
  for (const auto& weak : lists_) {
    if (auto list = weak.lock()) lists.push_back(std::move(list));
  }
  for (const auto& weak : dicts_) {
    if (auto dict = weak.lock()) dicts.push_back(std::move(dict));
  }
  // Every survivor is held here, so emptying one frees none of the others: cycles break, and each
  // survivor is released empty when these vectors go.
  for (const auto& list : lists) ValueList().swap(*list);
  for (const auto& dict : dicts) ValueDict().entries.swap(dict->entries);
}

void ContainerArena::track(const std::shared_ptr<ValueList>& list) {
  lists_.push_back(list);
  if (lists_.size() + dicts_.size() >= compact_at_) drop_expired();
}

void ContainerArena::track(const std::shared_ptr<ValueDict>& dict) {
  dicts_.push_back(dict);
  if (lists_.size() + dicts_.size() >= compact_at_) drop_expired();
}

void ContainerArena::drop_expired() {
  std::erase_if(lists_, [](const auto& weak) { return weak.expired(); });
  std::erase_if(dicts_, [](const auto& weak) { return weak.expired(); });
  compact_at_ = std::max<size_t>(1024, 2 * (lists_.size() + dicts_.size()));
}

}  // namespace hearth::jinja
