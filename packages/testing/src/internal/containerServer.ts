/** Starts PostgreSQL in a container through testcontainers; only called after the Docker engine answered a ping. */
import type { StartedServer } from "./embeddedServer.js"

export const startContainerServer = async (image: string): Promise<StartedServer> => {
  const { PostgreSqlContainer } = await import("@testcontainers/postgresql")
  const container = await new PostgreSqlContainer(image).start()
  return { url: container.getConnectionUri(), stop: async () => void (await container.stop()) }
}
