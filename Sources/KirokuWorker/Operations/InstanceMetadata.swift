import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// The EC2 instance type from the instance metadata service (IMDSv2: a session token, then
/// the type), with a short deadline so a machine outside EC2 loses half a second at most.
enum InstanceMetadata {
    static let endpoint = "http://169.254.169.254/latest"

    /// The instance type, or nil when there is no metadata service.
    static func instanceType(client: HTTPClient = .shared, timeout: TimeAmount = .milliseconds(500)) async -> String? {
        do {
            var tokenRequest = HTTPClientRequest(url: endpoint + "/api/token")
            tokenRequest.method = .PUT
            tokenRequest.headers.add(name: "X-aws-ec2-metadata-token-ttl-seconds", value: "60")
            let tokenResponse = try await client.execute(tokenRequest, timeout: timeout)
            guard tokenResponse.status == .ok else { return nil }
            let token = String(buffer: try await tokenResponse.body.collect(upTo: 4096))
            var typeRequest = HTTPClientRequest(url: endpoint + "/meta-data/instance-type")
            typeRequest.headers.add(name: "X-aws-ec2-metadata-token", value: token)
            let typeResponse = try await client.execute(typeRequest, timeout: timeout)
            guard typeResponse.status == .ok else { return nil }
            let type = String(buffer: try await typeResponse.body.collect(upTo: 256))
            return type.isEmpty ? nil : type
        } catch {
            return nil
        }
    }
}
