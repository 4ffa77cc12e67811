/** Spec 2.1 and 4.9: the envelope every paginated list answers with. */
export function pageOf<T>(items: T[], total: number, page: number, size: number) {
  return { items, total, page, size, pages: Math.ceil(total / size) };
}

export const offsetOf = (page: number, size: number) => (page - 1) * size;
