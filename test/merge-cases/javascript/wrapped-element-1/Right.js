import { progressReducer } from "./progress.js";

const supported = typeof fetch === "function";

const fetchAdapter = async (config) => {
  let { url, data, onUploadProgress } = config;

  try {
    let rate = undefined;
    if (typeof config.progressIntervalMs === "number") {
      rate = 1000 / config.progressIntervalMs;
    }

    if (onUploadProgress && streams && config.method !== "get") {
      const length = await bodyLength(data);
      data = track(data, progressReducer(onUploadProgress, rate));
    }

    const response = await fetch(url, { body: data });
    return settle(response, config);
  } catch (err) {
    throw wrapError(err, config);
  }
};

export default fetchAdapter;
