import { progressReducer } from "./progress.js";

const supported = typeof fetch === "function";

const fetchAdapter = supported && (async (config) => {
  let { url, data, onUploadProgress } = config;

  try {
    if (onUploadProgress && requestStreams && config.method !== "get") {
      const length = await bodyLength(data);
      data = track(data, progressReducer(onUploadProgress));
    }

    const response = await fetch(url, { body: data });
    return settle(response, config);
  } catch (err) {
    throw wrapError(err, config);
  }
});

export default fetchAdapter;
