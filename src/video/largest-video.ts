/**
 * The largest finished video the gateway expects to handle whole: its default cap on a video it
 * downloads to make a thumbnail from (`video.thumbnails.max_input_bytes`), and the client CLI's
 * default cap on a download whose size the server does not announce (`--max-bytes`). Every video
 * the gateway stores itself is smaller (an uploaded reference at most `video.uploads.max_video_bytes`,
 * an inline vendor output within `server.max_answer_bytes`), and a vendor's generated clip of a
 * minute or less is tens of megabytes.
 */
export const LARGEST_VIDEO_BYTES = 512 * 1024 * 1024;
