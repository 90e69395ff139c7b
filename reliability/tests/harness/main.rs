//! The cluster runner on its own: against real `wharf` processes (`single`: one node, and three
//! that get ready), and its network of namespaces (`netns`, needs root).

mod netns;
mod single;
