/** Page sizes of the listing endpoints (CONTRACT.md §2); kept apart from the schemas so the HTTP layer can read them without loading TypeBox. */
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;
