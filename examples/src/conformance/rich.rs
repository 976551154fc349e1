//! The suite's fixtures of rich results: image, audio, embedded resource and mixed content, each
//! a `#[tool]` returning [`Content`] blocks (a function, or a struct with its `Run`).

use tool_runtime::content::Content;
use tool_runtime::{CallContext, ToolError, tool, tool::Run};

/// A 1×1 red PNG (the bytes of [`TEST_IMAGE_BASE64`](super::TEST_IMAGE_BASE64)).
pub const TEST_IMAGE_PNG: [u8; 70] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xfc, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x05, 0x02, 0x00, 0x5f, 0xc8, 0xf1, 0xd2, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV file of `samples` 8-bit mono samples at 8 kHz, all silent.
pub fn silent_wav(samples: u32) -> Vec<u8> {
    let mut wav = Vec::with_capacity(44 + samples as usize);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + samples).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes()); // size of the format chunk
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&8000u32.to_le_bytes()); // samples per second
    wav.extend_from_slice(&8000u32.to_le_bytes()); // bytes per second
    wav.extend_from_slice(&1u16.to_le_bytes()); // bytes per frame
    wav.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&samples.to_le_bytes());
    wav.resize(44 + samples as usize, 0x80); // 8-bit PCM is silent at its midpoint
    wav
}

/// Tests image content response: a 1×1 red PNG.
#[tool(read_only)]
pub fn test_image_content() -> Content {
    Content::image(TEST_IMAGE_PNG, "image/png")
}

/// Tests audio content response: a short silent WAV.
#[tool(read_only)]
pub fn test_audio_content() -> Content {
    Content::audio(silent_wav(80), "audio/wav")
}

/// Tests embedded resource content response.
#[tool(read_only)]
pub fn test_embedded_resource() -> Content {
    Content::resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )
}

/// Tests response with multiple content types (text, image, resource).
#[tool(read_only, name = "test_multiple_content_types")]
pub struct TestMultipleContentTypes {}

impl Run for TestMultipleContentTypes {
    type Output = Vec<Content>;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<Vec<Content>, ToolError> {
        Ok(vec![
            Content::text("Multiple content types test:"),
            Content::image(TEST_IMAGE_PNG, "image/png"),
            Content::resource_text(
                "test://mixed-content-resource",
                "application/json",
                r#"{"test":"data","value":123}"#,
            ),
        ])
    }
}
