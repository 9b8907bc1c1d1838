// A stored Lighthouse result as the dashboard hands it to Lighthouse's renderers (report-view.js,
// flow-report-page.js): nothing that would send it off this gateway, and its filmstrip in the
// format the renderers assume.

/** The result without what makes the renderer offer to open it on Google's treemap site (it sends the data along). */
function offline(lhr) {
  const treemap = lhr.audits['script-treemap-data'];
  if (!treemap) return lhr;
  // The audit stays (categories refer to it); its details are what the button would send.
  return { ...lhr, audits: { ...lhr.audits, 'script-treemap-data': { ...treemap, details: undefined } } };
}

/** A data URL of an image, re-encoded as JPEG by the browser. */
async function asJpeg(dataUrl) {
  const image = new Image();
  image.src = dataUrl;
  await image.decode();
  const canvas = document.createElement('canvas');
  [canvas.width, canvas.height] = [image.naturalWidth, image.naturalHeight];
  canvas.getContext('2d').drawImage(image, 0, 0);
  return canvas.toDataURL('image/jpeg', 0.8);
}

const JPEG = 'data:image/jpeg;base64,';

/**
 * Filmstrip frames as JPEG: the renderers' compatibility step takes frames without the JPEG
 * data-URL prefix for bare base64 of old results and prefixes them, which breaks the agent's
 * small WebP frames (an invalid URL, an empty frame).
 */
async function jpegFilmstrips(lhr) {
  const audits = { ...lhr.audits };
  for (const [id, audit] of Object.entries(audits)) {
    if (audit.details?.type !== 'filmstrip') continue;
    const items = await Promise.all(
      audit.details.items.map(async (item) =>
        item.data.startsWith(JPEG) ? item : { ...item, data: await asJpeg(item.data) },
      ),
    );
    audits[id] = { ...audit, details: { ...audit.details, items } };
  }
  return { ...lhr, audits };
}

/** `lhr` ready for Lighthouse's renderers. */
export async function rendererResult(lhr) {
  return jpegFilmstrips(offline(lhr));
}
