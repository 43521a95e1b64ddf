export function schedule(job, options) {
  const queue = options.queue ?? defaultQueue;
  if (job.priority >= options.urgent) {
    queue.unshift(job);
    notify(queue, job.id);
  }
  return queue.length;
}
