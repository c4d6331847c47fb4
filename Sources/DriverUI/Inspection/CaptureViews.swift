#if canImport(SwiftUI)
import DriverKit
import VroomXModels
import SwiftUI
#if canImport(UIKit)
import UIKit
#elseif canImport(AppKit)
import AppKit
#endif

/// The camera for one slot, with what to frame written over the viewfinder
/// (photos, or the walkthrough video). Returns a file in the app's
/// temporary folder, and whether the camera took it just now (a phone
/// without a camera picks from the library); DriverKit copies it into its
/// upload queue, stamped with when and where if it was just taken.
struct CameraCaptureView: View {
    let slot: MediaSlot
    let done: (_ file: URL?, _ justTaken: Bool) -> Void

    var body: some View {
        #if canImport(UIKit) && os(iOS)
        CameraPicker(video: slot.kind == .video, overlayText: slot.framing, done: done)
            .ignoresSafeArea()
        #else
        VStack(spacing: 16) {
            Text(slot.framing)
            Text("The camera is on the phone; this build cannot take \(slot.title.lowercased()).")
            Button("Close") { done(nil, false) }
        }
        .padding()
        #endif
    }
}

#if canImport(UIKit) && os(iOS)
/// UIImagePickerController in camera mode, with the slot's outline text.
struct CameraPicker: UIViewControllerRepresentable {
    let video: Bool
    let overlayText: String
    let done: (_ file: URL?, _ justTaken: Bool) -> Void

    func makeUIViewController(context: Context) -> UIImagePickerController {
        let picker = UIImagePickerController()
        picker.sourceType = UIImagePickerController.isSourceTypeAvailable(.camera) ? .camera : .photoLibrary
        picker.mediaTypes = [video ? "public.movie" : "public.image"]
        if video { picker.videoQuality = .typeHigh; picker.videoMaximumDuration = 180 }
        picker.delegate = context.coordinator
        if picker.sourceType == .camera {
            let label = UILabel()
            label.text = overlayText
            label.textColor = .white
            label.numberOfLines = 0
            label.textAlignment = .center
            label.font = .preferredFont(forTextStyle: .headline)
            label.adjustsFontForContentSizeCategory = true
            label.backgroundColor = UIColor.black.withAlphaComponent(0.5)
            label.frame = CGRect(x: 16, y: 60, width: UIScreen.main.bounds.width - 32, height: 80)
            picker.cameraOverlayView = label
        }
        return picker
    }

    func updateUIViewController(_ controller: UIImagePickerController, context: Context) {}

    func makeCoordinator() -> Coordinator { Coordinator(done: done) }

    @MainActor
    final class Coordinator: NSObject, UIImagePickerControllerDelegate, UINavigationControllerDelegate {
        let done: (URL?, Bool) -> Void
        init(done: @escaping (URL?, Bool) -> Void) { self.done = done }

        func imagePickerController(_ picker: UIImagePickerController, didFinishPickingMediaWithInfo info: [UIImagePickerController.InfoKey: Any]) {
            // The camera's own time and place are dropped with its EXIF here: DriverKit stamps them (captureNow).
            let justTaken = picker.sourceType == .camera
            if let movie = info[.mediaURL] as? URL { return done(movie, justTaken) }
            guard let image = info[.originalImage] as? UIImage, let data = image.jpegData(compressionQuality: 0.85) else { return done(nil, false) }
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString + ".jpg")
            done((try? data.write(to: file)) != nil ? file : nil, justTaken)
        }

        func imagePickerControllerDidCancel(_ picker: UIImagePickerController) { done(nil, false) }
    }
}
#endif

/// The customer signs with a finger; saved as a PNG.
struct SignaturePadView: View {
    let done: (URL?) -> Void
    @State private var strokes: [[CGPoint]] = []
    @State private var drawing = false

    var body: some View {
        NavigationStack {
            VStack {
                Text("Customer: sign in the box").font(.headline)
                Canvas { context, _ in
                    for stroke in strokes where stroke.count > 1 {
                        var path = Path()
                        path.addLines(stroke)
                        context.stroke(path, with: .color(.primary), lineWidth: 3)
                    }
                }
                .frame(height: 220)
                .background(Color.gray.opacity(0.1))
                .overlay(RoundedRectangle(cornerRadius: 8).stroke(.secondary))
                .gesture(DragGesture(minimumDistance: 0)
                    .onChanged { value in
                        if !drawing || strokes.isEmpty { strokes.append([]); drawing = true }
                        strokes[strokes.count - 1].append(value.location)
                    }
                    .onEnded { _ in drawing = false })
                .accessibilityAddTraits(.allowsDirectInteraction)
                .accessibilityLabel("Signature area")
                .accessibilityHint("The customer draws their signature here")
                Button("Clear") { strokes = []; drawing = false }
            }
            .padding()
            .interactiveDismissDisabled()  // a downward stroke must not close the pad
            .navigationTitle("Signature")
            .toolbar {
                ToolbarItem(placement: .cancellationAction) { Button("Cancel") { done(nil) } }
                ToolbarItem(placement: .confirmationAction) {
                    Button("Save") { done(render()) }.disabled(strokes.isEmpty)
                }
            }
        }
    }

    @MainActor
    private func render() -> URL? {
        let renderer = ImageRenderer(content: Canvas { context, _ in
            for stroke in strokes where stroke.count > 1 {
                var path = Path()
                path.addLines(stroke)
                context.stroke(path, with: .color(.black), lineWidth: 3)
            }
        }.frame(width: 600, height: 220).background(Color.white))
        #if canImport(UIKit)
        guard let data = renderer.uiImage?.pngData() else { return nil }
        #else
        guard let image = renderer.cgImage, let data = NSBitmapImageRep(cgImage: image).representation(using: .png, properties: [:]) else { return nil }
        #endif
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString + ".png")
        return (try? data.write(to: file)) != nil ? file : nil
    }
}
#endif
