/**
 * Pure merge machinery: conflicts as values, three-way text merge, merge plans.
 *
 * @since 0.1.0
 */
export {}
