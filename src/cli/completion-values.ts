/** Where `addOptions` keeps an option's `OptionDecl.values` on commander's Option, for the completion scripts. */
export const COMPLETION_VALUES = Symbol('completion values');
